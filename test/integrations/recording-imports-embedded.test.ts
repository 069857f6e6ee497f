/**
 * Recording imports on the embedded store (PGlite, in-process coordination, the folder recording
 * store: what `npm start` runs): a manual run from a web index imports each file once, a second
 * run while one goes is 409, the next run skips what was imported, and every run's end is counted
 * in `vd_recording_import_runs_total` by its status.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { recordingImportRuns } from '../../control-plane/metrics.ts';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { assertError } from '../support/limits.ts';
import { startWebSource, wavFile, type WebSource } from '../support/recording-sources.ts';
import { startTestServer } from '../support/server.ts';

const CONNECTORS = '/api/integrations/v1/connectors';

const t = suite('recording imports: embedded store');
let cp: RunningControlPlane;
let owner: Session;
let web: WebSource;

async function ended(): Promise<Record<string, number>> {
  const m = await recordingImportRuns.get();
  return Object.fromEntries(m.values.map((v) => [String(v.labels.status), v.value]));
}

t.before(async () => {
  cp = await startTestServer({ embedded: true, env: { VD_ALLOW_PRIVATE_TARGETS: '1' }, recordingImports: { pollMs: 100 } });
  ({ owner } = await makeCompany(cp));
  web = await startWebSource();
});

t.after(async () => {
  await web?.close();
  await cp?.close();
});

t('a web index imported on PGlite into the folder store, once; runs counted by status', async () => {
  const before = await ended();
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  for (let i = 0; i < 3; i++) web.file(`/e/${i}.wav`, wavFile(10_000 + i));
  const index = JSON.stringify({ items: [0, 1, 2].map((i) => ({ url: `/e/${i}.wav` })) });
  web.on('/e/index.json', async (_req, res) => {
    await held;
    res.writeHead(200, { 'content-type': 'application/json' }).end(index);
  });
  const made = await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { kind: 'recording_import', name: 'Embedded', source: 'web_index', check_every_minutes: 0, index_url: `${web.url}/e/index.json` } });
  assert.is(made.status, 201, made.text);
  const con = made.body.id;
  const run = async () => {
    const a = await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner });
    assert.is(a.status, 202, a.text);
    return a.body.run.id as string;
  };
  const until = (id: string) =>
    eventually(`run ${id} to end`, async () => {
      const a = await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports`, { session: owner });
      return a.body.items.find((r: { id: string; status: string }) => r.id === id && (r.status === 'done' || r.status === 'failed'));
    }, 20_000);
  const first = await run();
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner }), 409, 'conflict');
  release();
  const r1 = await until(first);
  assert.equal([r1.status, r1.listed, r1.new, r1.imported], ['done', 3, 3, 3]);
  const r2 = await until(await run());
  assert.equal([r2.status, r2.imported, r2.skipped], ['done', 0, 3]);
  for (let i = 0; i < 3; i++) assert.is(web.hits(`/e/${i}.wav`), 1);
  const recs = await cp.services.store.db.selectFrom('recordings').select(['status', 'bytes']).where('connector_id', '=', con).execute();
  assert.equal(recs.map((r) => [r.status, Number(r.bytes)]).sort(), [['stored', 10_000], ['stored', 10_001], ['stored', 10_002]]);
  // A file in the folder store reads back whole.
  const one = await cp.services.store.db.selectFrom('recordings').select('storage_key').where('connector_id', '=', con).where('bytes', '=', '10001').executeTakeFirstOrThrow();
  const file = await cp.services.recordings.get(one.storage_key!);
  assert.is(file?.size, 10_001);
  file?.body.destroy();

  web.on('/e/gone.json', (_req, res) => void res.writeHead(500).end());
  const broken = await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { kind: 'recording_import', name: 'Broken', source: 'web_index', check_every_minutes: 0, index_url: `${web.url}/e/gone.json` } });
  const rb = await (async () => {
    const a = await call(cp.url, 'POST', `${CONNECTORS}/${broken.body.id}/recording-import/run`, { session: owner });
    return eventually('the broken run to end', async () => {
      const l = await call(cp.url, 'GET', `${CONNECTORS}/${broken.body.id}/recording-imports?status=failed`, { session: owner });
      return l.body.items.find((r: { id: string }) => r.id === a.body.run.id);
    }, 20_000);
  })();
  assert.match(rb.error, 'the web index answered 500');
  const after = await ended();
  assert.is((after.done ?? 0) - (before.done ?? 0), 2);
  assert.is((after.failed ?? 0) - (before.failed ?? 0), 1);
});

t.run();
