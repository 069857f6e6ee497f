/**
 * Recording import runs from a web index, over real HTTP on real Postgres and Redis, the index
 * and its files served by a real local HTTP server: 409 on a second run, the per-run cap, each
 * recording imported once per company and source, a crash between a file stored and its end
 * written, a store failure, two companies' runs at once on one instance, and the Authorization
 * value sent with every file at any origin. Setup and helpers: test/support/recording-imports.ts.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { eventually } from '../support/eventually.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { assertError } from '../support/limits.ts';
import { startWebSource, wavFile, type WebSource } from '../support/recording-sources.ts';
import { AUTH, CONNECTORS, cp, dataDir, fileOf, newImport, owner, runs, runToEnd, sql, startImports, startRun, stopImports, stored, tenantId, web } from '../support/recording-imports.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('recording imports: web index runs');

t.before(startImports);
t.after(stopImports);

t('409 while a run is queued or processing; the next run is accepted once it has ended', async () => {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  web.on('/held.json', async (_req, res) => {
    await held;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[]}');
  });
  const con = await newImport({ index_url: `${web.url}/held.json` });
  const first = await startRun(con);
  const second = await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner });
  assertError(second, 409, 'conflict');
  await eventually('the run to be processing', async () => (await runs(con))[0].status === 'processing');
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner }), 409, 'conflict');
  assert.is((await runs(con, '?status=processing')).length, 1);
  assert.is((await runs(con, '?status=done')).length, 0);
  release();
  await eventually('the run to end', async () => (await runs(con)).find((r) => r.id === first)?.status === 'done');
  const third = await runToEnd(con);
  assert.is(third.status, 'done');
  assert.is((await runs(con)).length, 2);
  assertError(await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports?status=running`, { session: owner }), 422, 'unprocessable');
});

t('at most per_run new files a run, the rest wait; each recording imported once', async () => {
  const items = [];
  for (let i = 0; i < 5; i++) {
    web.file(`/cap/${i}.wav`, wavFile(5_000));
    items.push({ url: `/cap/${i}.wav`, id: `cap-${i}` });
  }
  web.json('/cap.json', { items });
  const con = await newImport({ index_url: `${web.url}/cap.json`, per_run: 2 });
  const r1 = await runToEnd(con);
  assert.equal([r1.listed, r1.new, r1.imported, r1.skipped], [5, 5, 2, 0]);
  assert.equal(await stored(con), ['cap-0', 'cap-1'], 'the first listed go first');
  const r2 = await runToEnd(con);
  assert.equal([r2.listed, r2.new, r2.imported, r2.skipped], [5, 0, 2, 2]);
  const r3 = await runToEnd(con);
  assert.equal([r3.imported, r3.skipped], [1, 4]);
  const r4 = await runToEnd(con);
  assert.equal([r4.imported, r4.skipped], [0, 5]);
  assert.equal(await stored(con), ['cap-0', 'cap-1', 'cap-2', 'cap-3', 'cap-4']);
  for (let i = 0; i < 5; i++) assert.is(web.hits(`/cap/${i}.wav`), 1, `file ${i} fetched once`);
});

t('a crash after a file was stored but before its end was written: the run taken over marks it imported, fetching nothing and spending no attempt', async () => {
  web.file('/crashed/a.wav', wavFile(2_000));
  web.file('/crashed/b.wav', wavFile(2_000));
  web.json('/crashed.json', { items: [{ url: '/crashed/a.wav', id: 'crashed-a' }, { url: '/crashed/b.wav', id: 'crashed-b' }] });
  const con = await newImport({ index_url: `${web.url}/crashed.json` });
  const first = await runToEnd(con);
  assert.equal([first.status, first.imported], ['done', 2]);
  const recs = (await sql.query(`select id, source_name from recordings where connector_id = $1 order by source_name`, [con])).rows;
  // The state a crash leaves between saveRecording's commit (recording stored, event, review
  // queued) and the file's end: both files still importing under a run whose instance died,
  // one on its last attempt.
  const runId = `imp_crashed_${Date.now()}`;
  await sql.query(
    `insert into recording_import_runs (id, tenant_id, connector_id, trigger, status, started_at, taken, listed, lease_owner, lease_until)
     values ($1, $2, $3, 'manual', 'processing', now(), 2, 2, 'a-dead-instance', now() - interval '1 second')`,
    [runId, tenantId, con],
  );
  await sql.query(
    `update recording_import_files set status = 'importing', recording_id = null, run_id = $2, attempts = case name when 'crashed-a' then 3 else 1 end where connector_id = $1`,
    [con, runId],
  );
  const run = await eventually('the run to be taken over and end', async () => (await runs(con)).find((r) => r.id === runId && r.status !== 'processing'), 20_000);
  assert.equal([run.status, run.imported, run.failed], ['done', 2, 0], JSON.stringify(run));
  const files = await sql.query(`select name, status, attempts, recording_id, error from recording_import_files where connector_id = $1 order by name`, [con]);
  assert.equal(files.rows, [
    { name: 'crashed-a', status: 'imported', attempts: 3, recording_id: recs[0].id, error: null },
    { name: 'crashed-b', status: 'imported', attempts: 1, recording_id: recs[1].id, error: null },
  ]);
  assert.is(web.hits('/crashed/a.wav'), 1, 'not fetched again');
  assert.is(web.hits('/crashed/b.wav'), 1, 'not fetched again');
  assert.is((await sql.query(`select count(*)::int as n from recordings where connector_id = $1`, [con])).rows[0].n, 2);
});

t('a store failure: the reason shown is short (no path of ours); the recording row is failed when the file is given up', async () => {
  // A company whose folder in the store cannot be made: a file stands where it would go.
  const other = await makeCompany(cp);
  mkdirSync(join(dataDir, 'recordings'), { recursive: true });
  writeFileSync(join(dataDir, 'recordings', other.tenantId), 'in the way');
  try {
    web.file('/jam/a.wav', wavFile(2_000));
    web.json('/jam.json', { items: [{ url: '/jam/a.wav', id: 'jammed' }] });
    const con = await newImport({ index_url: `${web.url}/jam.json` }, other.owner);
    const reason = 'could not import: the recording store failed: try again';
    const r1 = await runToEnd(con, other.owner);
    assert.equal(fileOf(r1, 'jammed'), { name: 'jammed', status: 'waiting', attempts: 1, error: reason });
    const rec1 = (await sql.query(`select status, error from recordings where connector_id = $1`, [con])).rows;
    assert.equal(rec1, [{ status: 'waiting_upload', error: 'the recording store failed: try again' }], 'waiting while it will be tried again');
    await runToEnd(con, other.owner);
    const r3 = await runToEnd(con, other.owner);
    assert.equal(fileOf(r3, 'jammed'), { name: 'jammed', status: 'failed', attempts: 3, error: reason });
    assert.not.match(JSON.stringify(r3), dataDir, 'no path of ours');
    const rec = (await sql.query(`select status, error from recordings where connector_id = $1`, [con])).rows;
    assert.equal(rec, [{ status: 'failed', error: reason }], 'given up: the recording is failed, not waiting for ever');
    const seen = await call(cp.url, 'GET', '/api/core/v1/recordings', { session: other.owner });
    assert.is(seen.status, 200, seen.text);
    assert.not.match(seen.text, dataDir, 'no path of ours in the company’s recordings');
  } finally {
    rmSync(join(dataDir, 'recordings', other.tenantId), { force: true });
  }
});

t('each recording imported once per company and source: a connection deleted and made again, or a second one on the same index, imports nothing again', async () => {
  web.file('/same/a.wav', wavFile(2_000));
  web.file('/same/b.wav', wavFile(2_000));
  web.json('/same.json', { items: [{ url: '/same/a.wav', id: 'same-a' }, { url: '/same/b.wav' }] });
  const first = await newImport({ index_url: `${web.url}/same.json` });
  const r1 = await runToEnd(first);
  assert.equal([r1.status, r1.new, r1.imported], ['done', 2, 2]);
  const twin = await newImport({ index_url: `${web.url}/same.json` });
  const del = await call(cp.url, 'DELETE', `${CONNECTORS}/${first}`, { session: owner });
  assert.is(del.status, 204, del.text);
  const again = await newImport({ index_url: `${web.url}/same.json` });
  for (const con of [twin, again]) {
    const r = await runToEnd(con);
    assert.equal([r.status, r.listed, r.new, r.imported, r.skipped, r.failed], ['done', 2, 0, 0, 2, 0], JSON.stringify(r));
    const files = await sql.query(`select status, recording_id is not null as has from recording_import_files where connector_id = $1`, [con]);
    assert.equal(files.rows, [{ status: 'imported', has: true }, { status: 'imported', has: true }]);
  }
  assert.is(web.hits('/same/a.wav'), 1, 'fetched once');
  assert.is(web.hits('/same/b.wav'), 1, 'fetched once');
  const recs = await sql.query(`select count(*)::int as n from recordings where tenant_id = $1 and source_id = $2`, [tenantId, `web ${web.url}/same.json`]);
  assert.is(recs.rows[0].n, 2, 'two recordings, one each');
  // Another company reading the same index imports its own.
  const other = await makeCompany(cp);
  const theirs = await runToEnd(await newImport({ index_url: `${web.url}/same.json` }, other.owner), other.owner);
  assert.equal([theirs.new, theirs.imported], [2, 2]);
});

t('two companies\' runs go at once on one instance: a long run of one does not hold up the other\'s', async () => {
  const data = wavFile(2_000);
  const other = await makeCompany(cp);
  const cons: string[] = [];
  for (const [who, session] of [['one', owner], ['two', other.owner]] as const) {
    for (let i = 0; i < 12; i++) {
      // Slow files: each run lasts about 3 s (12 files, 4 at a time, 1 s each).
      web.on(`/both/${who}/${i}.wav`, async (_req, res) => {
        await sleep(1000);
        res.writeHead(200, { 'content-length': String(data.length) }).end(data);
      });
    }
    web.json(`/both/${who}.json`, Array.from({ length: 12 }, (_, i) => ({ url: `/both/${who}/${i}.wav`, id: `${who}-${i}` })));
    cons.push(await newImport({ index_url: `${web.url}/both/${who}.json` }, session));
  }
  const ids = [await startRun(cons[0]), await startRun(cons[1], other.owner)];
  // Both processing on this one instance, each with files imported, before either has ended.
  const both = await eventually('both runs under way at once, each having imported files', async () => {
    const r = await sql.query(`select id, status, imported, ran_by from recording_import_runs where id = any($1) order by id`, [ids]);
    if (r.rows.some((x) => x.status === 'done' || x.status === 'failed')) throw new Error(`a run ended before the other got going: ${JSON.stringify(r.rows)}`);
    return r.rows.every((x) => x.status === 'processing' && x.imported >= 1) && r.rows;
  }, 20_000, 50);
  assert.is(new Set(both.map((x: { ran_by: string }) => x.ran_by)).size, 1, 'one instance');
  for (const [i, con] of cons.entries()) {
    const session = i === 0 ? owner : other.owner;
    const run = await eventually('the run to end', async () => (await runs(con, '', session)).find((r) => r.id === ids[i] && r.status === 'done'), 20_000);
    assert.is(run.imported, 12);
  }
});

t('the Authorization value goes with the index and with every file it lists, at any origin (spec: also sent when fetching files)', async () => {
  const elsewhere = await startWebSource();
  try {
    const port = new URL(web.url).port;
    web.file('/auth/here.wav', wavFile(2_000));
    web.file('/auth/by-name.wav', wavFile(2_000));
    elsewhere.file('/auth/there.wav', wavFile(2_000));
    web.json('/auth/index.json', [
      { url: 'here.wav', id: 'auth-here' },
      // Another port, and the same server under another host name: other origins.
      { url: `${elsewhere.url}/auth/there.wav`, id: 'auth-there' },
      { url: `http://localhost:${port}/auth/by-name.wav`, id: 'auth-by-name' },
    ]);
    const con = await newImport({ index_url: `${web.url}/auth/index.json`, authorization: AUTH });
    const run = await runToEnd(con);
    assert.equal([run.status, run.imported], ['done', 3], JSON.stringify(run));
    const auth = (src: WebSource, path: string) => src.requests.filter((r) => r.path === path).map((r) => r.authorization);
    assert.equal(auth(web, '/auth/index.json'), [AUTH]);
    assert.equal(auth(web, '/auth/here.wav'), [AUTH]);
    assert.equal(auth(elsewhere, '/auth/there.wav'), [AUTH], 'sent to a file at another port');
    assert.equal(auth(web, '/auth/by-name.wav'), [AUTH], 'sent to a file under another host name');
  } finally {
    await elsewhere.close();
  }
});

t.run();
