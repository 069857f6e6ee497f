/**
 * Recording import connections from a web index, over real HTTP on real Postgres and Redis, the
 * index and its files served by a real local HTTP server: the settings and every limit at its
 * edge, secrets never shown, the index's two shapes, relative addresses, the Authorization header
 * on the index and the files, each recording queued for the QA Bot, and who may start and read
 * runs. Setup and helpers: test/support/recording-imports.ts.
 */
import { Writable } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger } from '../../shared/logger.ts';
import { makeCompany, makeKey, makeUser } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { assertError } from '../support/limits.ts';
import { wavFile } from '../support/recording-sources.ts';
import { AUTH, CONNECTORS, cp, fileOf, newCampaign, newImport, owner, runToEnd, sql, startImports, stopImports, stored, tenantId, web } from '../support/recording-imports.ts';

const t = suite('recording imports: web index settings');

t.before(startImports);
t.after(stopImports);

t('settings: defaults, every limit at its edge, secrets never shown, PATCH and delete', async () => {
  const made = await call(cp.url, 'POST', CONNECTORS, {
    session: owner,
    body: { kind: 'recording_import', name: 'Index', source: 'web_index', check_every_minutes: 0, index_url: `${web.url}/index.json`, authorization: AUTH },
  });
  assert.is(made.status, 201, made.text);
  assert.is(made.body.per_run, 50);
  assert.is(made.body.max_file_mb, 100);
  assert.is(made.body.check_every_minutes, 0);
  assert.is(made.body.authorization_present, true);
  assert.not.ok(made.text.includes(AUTH), 'the Authorization value is never shown');
  const con = made.body.id;

  const base = { kind: 'recording_import', name: 'x', source: 'web_index', index_url: `${web.url}/i.json` };
  for (const [field, value, ok] of [
    ['check_every_minutes', 4, false], ['check_every_minutes', 5, true], ['check_every_minutes', 10_080, true], ['check_every_minutes', 10_081, false],
    ['check_every_minutes', 0, true], ['check_every_minutes', -1, false],
    ['per_run', 500, true], ['per_run', 501, false], ['per_run', 0, false],
    ['max_file_mb', 500, true], ['max_file_mb', 501, false], ['max_file_mb', 0, false],
  ] as const) {
    const a = await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, check_every_minutes: 0, [field]: value } });
    if (ok) {
      assert.is(a.status, 201, `${field}=${value}: ${a.text}`);
      assert.is(a.body[field], value);
    } else {
      assertError(a, 422, 'unprocessable');
      assert.match(a.body.error.message, field, `${field}=${value} names the field`);
    }
    // The same limits on a PATCH.
    const p = await call(cp.url, 'PATCH', `${CONNECTORS}/${con}`, { session: owner, body: { [field]: value } });
    if (ok) assert.is(p.status, 200, p.text);
    else assertError(p, 422, 'unprocessable');
  }
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, index_url: undefined } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, index_url: 'ftp://example.com/i.json' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, index_url: 'https://user:pw@example.com/i.json' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, bucket: 'b' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, url: 'https://example.com' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, authorization: 'a\r\nb' } }), 422, 'unprocessable');

  // A bucket: its region and endpoint defaults, and its keys required and never shown.
  const bucketBase = { kind: 'recording_import', name: 'b', source: 'bucket', check_every_minutes: 0, bucket: 'calls' };
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...bucketBase, secret_key: 's' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...bucketBase, access_key: 'a' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...bucketBase, bucket: undefined, access_key: 'a', secret_key: 's' } }), 422, 'unprocessable');
  const b = await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...bucketBase, access_key: 'AKIAEXAMPLE1', secret_key: 'very-secret-key-value-1' } });
  assert.is(b.status, 201, b.text);
  assert.is(b.body.region, 'us-east-1');
  assert.is(b.body.endpoint, null);
  assert.is(b.body.endpoint_used, 'https://s3.us-east-1.amazonaws.com');
  assert.is(b.body.secret_key_present, true);
  assert.is(b.body.access_key_present, true);
  const shown = (await call(cp.url, 'GET', CONNECTORS, { session: owner })).text + (await call(cp.url, 'GET', `${CONNECTORS}/${b.body.id}`, { session: owner })).text + b.text;
  for (const secret of ['AKIAEXAMPLE1', 'very-secret-key-value-1', AUTH]) assert.not.ok(shown.includes(secret), `${secret} is never shown`);
  const eu = await call(cp.url, 'PATCH', `${CONNECTORS}/${b.body.id}`, { session: owner, body: { region: 'eu-west-1', prefix: 'calls/2026/' } });
  assert.is(eu.status, 200, eu.text);
  assert.is(eu.body.endpoint_used, 'https://s3.eu-west-1.amazonaws.com');
  assert.is(eu.body.prefix, 'calls/2026/');
  assert.is(eu.body.secret_key_present, true, 'a PATCH without the secret keeps it');
  assert.not.ok(eu.text.includes('very-secret-key-value-1'));

  // A log line carrying the settings (an error's context, a request body) shows none of the secrets.
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => void (lines.push(String(chunk)), done()) });
  createLogger('info', sink).info({ body: { access_key: 'AKIAEXAMPLE1', secret_key: 'very-secret-key-value-1', authorization: AUTH }, settings: { secret_key: 'very-secret-key-value-1' } }, 'saved');
  assert.is(lines.length, 1);
  for (const secret of ['AKIAEXAMPLE1', 'very-secret-key-value-1', AUTH]) assert.not.ok(lines[0].includes(secret), `${secret} is not logged`);

  assert.is((await call(cp.url, 'DELETE', `${CONNECTORS}/${con}`, { session: owner })).status, 204);
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner }), 404, 'not_found');
});

t('a web index: items object and bare array, relative urls, ids or full addresses as names, the Authorization header on every request; QA reviews queued', async () => {
  const a = wavFile(20_000);
  const b = wavFile(30_000);
  web.file('/rec/a.wav', a);
  web.file('/rec/b%20(1).wav', b);
  web.file('/other/c.mp3', wavFile(10_000));
  web.json('/v1/index.json', {
    items: [
      { url: '../rec/a.wav', id: 'call-1', campaign: 'Spring' },
      { url: `${web.url}/rec/b%20(1).wav` },
      { url: '/other/c.mp3', id: 42 },
      { filename: 'no-url.wav' },
    ],
  });
  const spring = await newCampaign('Spring');
  const fallback = await newCampaign('Default label');
  const con = await newImport({ index_url: `${web.url}/v1/index.json`, authorization: AUTH, campaign_label: 'Default label' });

  const test = await call(cp.url, 'POST', `${CONNECTORS}/${con}/test`, { session: owner });
  assert.is(test.status, 200, test.text);
  assert.is(test.body.ok, true);
  assert.is(test.body.recordings_seen, 3);
  assert.match(test.body.message, 'without a usable url');

  const run = await runToEnd(con);
  assert.is(run.status, 'done', JSON.stringify(run));
  assert.equal({ listed: run.listed, new: run.new, imported: run.imported, skipped: run.skipped, failed: run.failed }, { listed: 3, new: 3, imported: 3, skipped: 0, failed: 0 });
  assert.equal(await stored(con), ['42', `${web.url}/rec/b%20(1).wav`, 'call-1'].sort());
  assert.equal(fileOf(run, 'call-1'), { name: 'call-1', status: 'imported', attempts: 1, error: null });
  // Every request (the index and each file) carried the Authorization value.
  const mine = web.requests.filter((r) => ['/v1/index.json', '/rec/a.wav', '/rec/b%20(1).wav', '/other/c.mp3'].includes(r.path));
  assert.ok(mine.length >= 5);
  assert.ok(mine.every((r) => r.authorization === AUTH));
  // The bytes arrived whole, and each recording was queued for the QA Bot once.
  const rec = await sql.query(`select id, bytes from recordings where connector_id = $1 and source_name = 'call-1'`, [con]);
  assert.is(Number(rec.rows[0].bytes), a.length);
  // The campaign the item names, else the connection's label (by name in the company).
  const campaigns = await sql.query(`select source_name, campaign_id from recordings where connector_id = $1 order by source_name`, [con]);
  assert.equal(Object.fromEntries(campaigns.rows.map((r) => [r.source_name, r.campaign_id])), { '42': fallback, [`${web.url}/rec/b%20(1).wav`]: fallback, 'call-1': spring });
  const events = await sql.query(
    `select count(*)::int as n from outbox o join recordings c on c.id = o.data->>'recording_id' where o.subject = 'vd.call.recording_stored' and o.data->>'source' = 'import' and c.connector_id = $1`,
    [con],
  );
  assert.is(events.rows[0].n, 3, 'one vd.call.recording_stored per recording');
  const reviews = await sql.query(`select count(*)::int as n from qa_reviews r join recordings c on c.id = r.recording_id where c.connector_id = $1`, [con]);
  assert.is(reviews.rows[0].n, 3, 'each queued for the QA Bot once');

  // A bare array works too.
  web.json('/bare.json', [{ url: 'rec/a.wav' }]);
  const bare = await newImport({ index_url: `${web.url}/bare.json` });
  const r2 = await runToEnd(bare);
  assert.is(r2.imported, 1, JSON.stringify(r2));
  assert.equal(await stored(bare), [`${web.url}/rec/a.wav`]);
});

t('who may: a member reads runs but cannot start one; keys and a missing CSRF header are refused; another company sees 404', async () => {
  web.json('/who.json', []);
  const con = await newImport({ index_url: `${web.url}/who.json` });
  const member = await makeUser(cp, tenantId, ['agent']);
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: member.session }), 403, 'forbidden');
  assert.is((await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports`, { session: member.session })).status, 200);
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner, noCsrf: true }), 403, 'forbidden');
  const key = await makeKey(cp.url, owner, ['read']);
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { key: key.key }), 403, 'forbidden');
  const other = await makeCompany(cp);
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: other.owner }), 404, 'not_found');
  assertError(await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports`, { session: other.owner }), 404, 'not_found');
});

t.run();
