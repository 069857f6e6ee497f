/**
 * The AI upstream's settings and samples in the store, on Postgres and on PGlite alike: a key is
 * kept for `aiProvider` and shown only as present, a base address is checked for its shape, and
 * samples written in one batch are all there.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { AI_PURPOSES, aiProvider, baseUrlProblem, listAiProviders, recordAiSample, setAiProvider } from '../../control-plane/ai/providers.ts';
import { openPglite, openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { createTestDatabase } from '../support/db.ts';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { migrations } from '../../control-plane/infra/db/migrations/index.ts';
import * as migration0022 from '../../control-plane/infra/db/migrations/20261126_0022_ai_samples_reply_times.ts';
import { createLogger } from '../../shared/logger.ts';

const t = suite('AI settings and samples in the store');
let drop: () => Promise<void> = async () => {};
const stores: Record<string, Store> = {};
const by = { kind: 'operator' as const, id: 'opr_test', email: 'o@example.com' };

t.before(async () => {
  const db = await createTestDatabase({ empty: true });
  drop = db.drop;
  stores.postgres = openPostgres(db.url);
  stores.pglite = await openPglite(null);
  for (const s of Object.values(stores)) await s.migrate();
});

t.after(async () => {
  for (const s of Object.values(stores)) await s.close();
  await drop();
});

t('base addresses: http and https only, no credentials, no query', () => {
  assert.is(baseUrlProblem('https://api.example.com/v1'), null);
  assert.is(baseUrlProblem('http://10.0.0.5:8000'), null);
  assert.ok(baseUrlProblem('ftp://api.example.com'));
  assert.ok(baseUrlProblem('api.example.com'));
  assert.ok(baseUrlProblem('https://user:pw@api.example.com'));
  assert.ok(baseUrlProblem('https://api.example.com/v1?key=x'));
  assert.ok(baseUrlProblem('https://api.example.com/v1#x'));
});

t('the logger redacts an api_key field at any depth of one level', () => {
  let out = '';
  const log = createLogger('info', new Writable({ write: (c, _e, cb) => ((out += c.toString()), cb()) }));
  log.info({ api_key: 'sk-top-level-value', provider: { api_key: 'sk-nested-value' } }, 'a line');
  assert.match(out, '[redacted]');
  assert.not.match(out, 'sk-top-level-value');
  assert.not.match(out, 'sk-nested-value');
});

for (const kind of ['postgres', 'pglite']) {
  t(`${kind}: a provider is set, its key kept and never listed; absent keeps it, null removes it`, async () => {
    const store = stores[kind];
    assert.equal((await listAiProviders(store)).map((p) => [p.purpose, p.base_url, p.key_present]), AI_PURPOSES.map((p) => [p, null, false]));
    assert.is(await aiProvider(store, 'qa'), null);
    const set = await setAiProvider(store, by, { purpose: 'qa', base_url: 'https://llm.example.com/v1/', model: 'm-1', api_key: 'sk-secret-value' });
    assert.equal([set.base_url, set.model, set.key_present], ['https://llm.example.com/v1', 'm-1', true]);
    assert.equal(await aiProvider(store, 'qa'), { base_url: 'https://llm.example.com/v1', model: 'm-1', api_key: 'sk-secret-value' });
    await setAiProvider(store, by, { purpose: 'qa', base_url: 'https://llm.example.com/v2', model: 'm-2' });
    assert.is((await aiProvider(store, 'qa'))?.api_key, 'sk-secret-value');
    assert.not.match(JSON.stringify(await listAiProviders(store)), 'sk-secret');
    await setAiProvider(store, by, { purpose: 'qa', base_url: 'https://llm.example.com/v2', model: 'm-2', api_key: null });
    assert.is((await aiProvider(store, 'qa'))?.api_key, null);
    assert.is((await listAiProviders(store)).find((p) => p.purpose === 'qa')?.key_present, false);
    const events = await store.db.selectFrom('outbox').select(['subject', 'data']).where('subject', '=', 'vd.platform.ai_settings_changed').execute();
    assert.is(events.length, 3);
    assert.not.match(JSON.stringify(events), 'sk-secret');
    try {
      await setAiProvider(store, by, { purpose: 'bot', base_url: 'file:///etc/passwd', model: 'm' });
      assert.unreachable('a file address was taken');
    } catch (err) {
      assert.match((err as Error).message, 'base_url');
    }
  });

  t(`${kind}: a batch of samples is written in one statement`, async () => {
    const store = stores[kind];
    const at = new Date(Date.now() - 1000);
    await recordAiSample(store, [
      { purpose: 'bot', kind: 'reply', ok: true, reply_ms: 120.5, instance: 'i-1', call_id: 'call_1', node_id: 'n1', at },
      { purpose: 'bot', kind: 'session_started', ok: true, instance: 'i-1', call_id: 'call_1', node_id: 'n1' },
      { purpose: 'qa', kind: 'reply', ok: false, instance: 'i-2' },
      { purpose: 'bot', kind: 'session_ended', ok: true, reply_times: [250.5, 1000], instance: 'i-1', call_id: 'call_1', node_id: 'n1' },
    ]);
    await store.transaction((tx) => recordAiSample(tx, { purpose: 'transcription', kind: 'reply', ok: true, reply_ms: 3, instance: 'i-2' }));
    const rows = await store.db.selectFrom('ai_samples').select(['purpose', 'kind', 'ok', 'reply_ms', 'reply_times', 'instance', 'call_id', 'at']).orderBy('id').execute();
    assert.equal(
      rows.map((r) => [r.purpose, r.kind, r.ok, r.reply_ms, r.reply_times, r.instance, r.call_id]),
      [
        ['bot', 'reply', true, 120.5, null, 'i-1', 'call_1'],
        ['bot', 'session_started', true, null, null, 'i-1', 'call_1'],
        ['qa', 'reply', false, null, null, 'i-2', null],
        ['bot', 'session_ended', true, null, [250.5, 1000], 'i-1', 'call_1'],
        ['transcription', 'reply', true, 3, null, 'i-2', null],
      ],
    );
    assert.is(rows[0].at.getTime(), at.getTime());
  });
}

t('migration 0022 gives reply_times back to a database that ran 0020 before the column was added to it', async () => {
  assert.is(migrations['20261126_0022_ai_samples_reply_times'], migration0022, 'registered');
  for (const [kind, store] of Object.entries(stores)) {
    const columnType = async () =>
      (await sql<{ t: string | null }>`select (select format_type(atttypid, atttypmod) from pg_attribute where attrelid = 'ai_samples'::regclass and attname = 'reply_times' and not attisdropped) as t`.execute(store.db)).rows[0].t;
    assert.is(await columnType(), 'double precision[]', kind);
    // As such a database was: 0020 without the column (later migrations have run since: 0022 is
    // run here on its own, as the migrator runs a pending one).
    await sql`alter table ai_samples drop column reply_times`.execute(store.db);
    assert.is(await columnType(), null, kind);
    await migration0022.up(store.db);
    assert.is(await columnType(), 'double precision[]', kind);
    await recordAiSample(store, { purpose: 'bot', kind: 'session_ended', ok: true, reply_times: [1.5, 2], instance: `mig-${kind}`, call_id: 'c-mig' });
    const row = await store.db.selectFrom('ai_samples').select('reply_times').where('instance', '=', `mig-${kind}`).executeTakeFirstOrThrow();
    assert.equal(row.reply_times, [1.5, 2], kind);
    // On a database that has the column (0020 as it is now), 0022 changes nothing.
    await migration0022.up(store.db);
    assert.is(await columnType(), 'double precision[]', kind);
    assert.equal((await store.db.selectFrom('ai_samples').select('reply_times').where('instance', '=', `mig-${kind}`).executeTakeFirstOrThrow()).reply_times, [1.5, 2]);
  }
});

t.run();
