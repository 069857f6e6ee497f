/**
 * Recording import runs from a web index whose files or index fail, over real HTTP on real
 * Postgres and Redis, the index and its files served by a real local HTTP server: `unsupported
 * file type` and oversized files never retried, a file failing twice then succeeding and one
 * failing three times, one bad file never failing the run, the 8 MB index and one byte more, a
 * redirect refused and an unreachable index. Setup and helpers: test/support/recording-imports.ts.
 */
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { call } from '../support/http.ts';
import { wavFile } from '../support/recording-sources.ts';
import { CONNECTORS, MB, cp, fileOf, newImport, owner, runs, runToEnd, sql, startImports, stopImports, stored, web } from '../support/recording-imports.ts';

const t = suite('recording imports: web index failures');

t.before(startImports);
t.after(stopImports);

t('a file neither .wav nor .mp3 fails at once with "unsupported file type" and is never tried again', async () => {
  web.file('/types/notes.txt', Buffer.from('hello'));
  web.file('/types/ok.WAV', wavFile(2_000));
  web.json('/types.json', { items: [{ url: '/types/notes.txt', id: 'notes' }, { url: '/types/ok.WAV', id: 'ok' }, { url: '/types/x', filename: 'x.ogg', id: 'ogg' }] });
  const con = await newImport({ index_url: `${web.url}/types.json` });
  const r1 = await runToEnd(con);
  assert.equal([r1.imported, r1.failed], [1, 2]);
  assert.equal(fileOf(r1, 'notes'), { name: 'notes', status: 'failed', attempts: 1, error: 'unsupported file type' });
  assert.equal(fileOf(r1, 'ogg'), { name: 'ogg', status: 'failed', attempts: 1, error: 'unsupported file type' });
  const r2 = await runToEnd(con);
  assert.equal([r2.imported, r2.failed, r2.skipped], [0, 0, 3]);
  assert.is(web.hits('/types/notes.txt'), 0, 'never fetched');
  assert.is(web.hits('/types/x'), 0, 'never fetched');
  const row = await sql.query(`select attempts, status from recording_import_files where connector_id = $1 and name = 'notes'`, [con]);
  assert.equal(row.rows[0], { attempts: 1, status: 'failed' });
});

t('the largest file at its edge: 1 MB imported, 1 MB and one byte fails and is never retried (declared or only counted while streaming)', async () => {
  web.file('/size/exact.wav', wavFile(MB));
  web.file('/size/over.wav', wavFile(MB + 1));
  web.file('/size/over-chunked.wav', wavFile(MB + 1), { chunked: true });
  web.file('/size/exact-chunked.wav', wavFile(MB), { chunked: true });
  web.json('/size.json', ['exact', 'over', 'over-chunked', 'exact-chunked'].map((n) => ({ url: `/size/${n}.wav`, id: n })));
  const con = await newImport({ index_url: `${web.url}/size.json`, max_file_mb: 1 });
  const r1 = await runToEnd(con);
  assert.equal([r1.imported, r1.failed], [2, 2], JSON.stringify(r1));
  for (const n of ['over', 'over-chunked']) {
    const f = fileOf(r1, n);
    assert.is(f.status, 'failed');
    assert.is(f.attempts, 1);
    assert.match(f.error, 'size limit of 1 MB');
  }
  assert.equal(await stored(con), ['exact', 'exact-chunked']);
  const r2 = await runToEnd(con);
  assert.equal([r2.imported, r2.failed, r2.skipped], [0, 0, 4]);
  assert.is(web.hits('/size/over.wav'), 1);
  assert.is(web.hits('/size/over-chunked.wav'), 1);
  // Nothing of the oversized files was kept.
  const left = await sql.query(`select count(*)::int as n from recordings where connector_id = $1 and status = 'stored' and source_name like 'over%'`, [con]);
  assert.is(left.rows[0].n, 0);
});

t('a file failing twice then succeeding is imported on its third attempt; one failing three times is given up', async () => {
  let flaky = 0;
  web.on('/retry/flaky.wav', (_req, res) => {
    if (++flaky <= 2) return void res.writeHead(500).end('busy');
    const data = wavFile(4_000);
    res.writeHead(200, { 'content-length': String(data.length) }).end(data);
  });
  web.on('/retry/broken.wav', (_req, res) => void res.writeHead(503).end('down'));
  web.json('/retry.json', { items: [{ url: '/retry/flaky.wav', id: 'flaky' }, { url: '/retry/broken.wav', id: 'broken' }] });
  const con = await newImport({ index_url: `${web.url}/retry.json` });
  const r1 = await runToEnd(con);
  assert.is(r1.status, 'done');
  assert.equal(fileOf(r1, 'flaky'), { name: 'flaky', status: 'waiting', attempts: 1, error: 'the file answered 500' });
  assert.equal(fileOf(r1, 'broken'), { name: 'broken', status: 'waiting', attempts: 1, error: 'the file answered 503' });
  const r2 = await runToEnd(con);
  assert.equal(fileOf(r2, 'flaky').attempts, 2);
  assert.equal(fileOf(r2, 'broken').status, 'waiting');
  const r3 = await runToEnd(con);
  assert.equal(fileOf(r3, 'flaky'), { name: 'flaky', status: 'imported', attempts: 3, error: null });
  assert.equal(fileOf(r3, 'broken'), { name: 'broken', status: 'failed', attempts: 3, error: 'the file answered 503' });
  const r4 = await runToEnd(con);
  assert.equal([r4.imported, r4.failed, r4.skipped], [0, 0, 2]);
  // Each run's list keeps the files as they ended in it, and matches its counts: the failures of
  // the first two runs are still theirs after the later runs took the files again.
  const all = (await runs(con)).reverse();
  assert.equal(all.map((r) => r.files.map((f: Record<string, unknown>) => `${f.name} ${f.status} ${f.attempts}`)), [
    ['flaky waiting 1', 'broken waiting 1'],
    ['flaky waiting 2', 'broken waiting 2'],
    ['flaky imported 3', 'broken failed 3'],
    [],
  ]);
  for (const r of all) {
    const files = r.files as Array<{ status: string }>;
    assert.is(files.filter((f) => f.status === 'imported').length, r.imported, `run ${r.id} imported`);
    assert.is(files.filter((f) => f.status === 'waiting' || f.status === 'failed').length, r.failed, `run ${r.id} failed`);
  }
  assert.is(web.hits('/retry/broken.wav'), 3, 'three attempts in all');
  assert.is(web.hits('/retry/flaky.wav'), 3);
  assert.equal(await stored(con), ['flaky']);
});

t('one bad file never fails the run: a refused address fails for good, a refused connection or a stall is an attempt; the good file is imported', async () => {
  // A port nothing listens on: connections to it are refused.
  const closed = createNetServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  web.file('/bad/good.wav', wavFile(3_000));
  // Never answers.
  web.on('/bad/stall.wav', () => {});
  web.json('/bad.json', {
    items: [
      // Listed first: a run that stopped at them would never reach the good one.
      { url: `http://0.0.0.0:${port}/guarded.wav`, id: 'guarded' },
      { url: `http://127.0.0.1:${port}/down.wav`, id: 'down' },
      { url: '/bad/stall.wav', id: 'stall' },
      { url: '/bad/good.wav', id: 'good' },
    ],
  });
  const con = await newImport({ index_url: `${web.url}/bad.json` });
  const r1 = await runToEnd(con);
  assert.is(r1.status, 'done', JSON.stringify(r1));
  assert.is(r1.error, null);
  assert.equal([r1.listed, r1.imported, r1.failed], [4, 1, 3]);
  assert.equal(fileOf(r1, 'good'), { name: 'good', status: 'imported', attempts: 1, error: null });
  assert.equal(fileOf(r1, 'guarded').status, 'failed', 'an address refused by the guard is not tried again');
  assert.equal(fileOf(r1, 'guarded').attempts, 1);
  assert.match(fileOf(r1, 'guarded').error, 'address refused');
  assert.equal(fileOf(r1, 'down'), { name: 'down', status: 'waiting', attempts: 1, error: 'the file could not be reached: connection refused' });
  assert.equal(fileOf(r1, 'stall'), { name: 'stall', status: 'waiting', attempts: 1, error: 'the file could not be reached: no answer in time' });
  assert.equal(await stored(con), ['good']);
  // The next runs try the refused connection again, up to 3 attempts in all; the guarded address never again.
  const r2 = await runToEnd(con);
  assert.equal([r2.status, r2.imported, r2.failed, r2.skipped], ['done', 0, 2, 2]);
  const r3 = await runToEnd(con);
  assert.is(r3.status, 'done');
  assert.equal(fileOf(r3, 'down'), { name: 'down', status: 'failed', attempts: 3, error: 'the file could not be reached: connection refused' });
  assert.equal(fileOf(r3, 'stall'), { name: 'stall', status: 'failed', attempts: 3, error: 'the file could not be reached: no answer in time' });
  const files = await sql.query(`select name, status, attempts from recording_import_files where connector_id = $1 order by name`, [con]);
  assert.equal(files.rows, [
    { name: 'down', status: 'failed', attempts: 3 },
    { name: 'good', status: 'imported', attempts: 1 },
    { name: 'guarded', status: 'failed', attempts: 1 },
    { name: 'stall', status: 'failed', attempts: 3 },
  ]);
  assert.is(web.hits('/bad/stall.wav'), 3);
});

t('the web index at its limit: 8 MB is read, one byte more is refused (declared, or counted as it streams)', async () => {
  web.file('/big/a.wav', wavFile(2_000));
  const indexOf = (bytes: number) => {
    const head = '{"items":[{"url":"/big/a.wav","id":"big-a"}],"pad":"';
    const tail = '"}';
    return Buffer.from(head + 'x'.repeat(bytes - head.length - tail.length) + tail);
  };
  const exact = indexOf(8 * MB);
  const over = indexOf(8 * MB + 1);
  assert.is(exact.length, 8 * MB);
  web.on('/big/exact.json', (_req, res) => void res.writeHead(200, { 'content-length': String(exact.length) }).end(exact));
  web.on('/big/over.json', (_req, res) => void res.writeHead(200, { 'content-length': String(over.length) }).end(over));
  web.on('/big/over-chunked.json', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    for (let i = 0; i < over.length; i += 256 * 1024) res.write(over.subarray(i, i + 256 * 1024));
    res.end();
  });
  const ok = await runToEnd(await newImport({ index_url: `${web.url}/big/exact.json` }));
  assert.is(ok.status, 'done', JSON.stringify(ok));
  assert.is(ok.imported, 1);
  for (const path of ['/big/over.json', '/big/over-chunked.json']) {
    const r = await runToEnd(await newImport({ index_url: `${web.url}${path}` }));
    assert.is(r.status, 'failed', path);
    assert.match(r.error, 'over 8 MB');
    assert.is(r.listed, 0);
  }
});

t('a redirect from the index is refused and not followed; an unreachable index fails the run', async () => {
  web.json('/target.json', { items: [{ url: '/big/a.wav' }] });
  web.on('/moved.json', (_req, res) => void res.writeHead(302, { location: `${web.url}/target.json` }).end());
  const con = await newImport({ index_url: `${web.url}/moved.json` });
  const r = await runToEnd(con);
  assert.is(r.status, 'failed');
  assert.match(r.error, 'answered 302: redirects are not followed');
  assert.is(web.hits('/target.json'), 0);
  const test = await call(cp.url, 'POST', `${CONNECTORS}/${con}/test`, { session: owner });
  assert.equal([test.status, test.body.ok], [200, false]);
  assert.match(test.body.message, 'redirects are not followed');

  const dead = await newImport({ index_url: 'http://127.0.0.1:1/index.json' });
  const d = await runToEnd(dead);
  assert.is(d.status, 'failed');
  assert.match(d.error, 'could not be reached');
});

t.run();
