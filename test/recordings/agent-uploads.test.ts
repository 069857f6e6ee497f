/**
 * The agent's uploader against a local HTTP server standing in for the control plane's upload
 * route: at most `concurrency` uploads at once, each file sent whole with its headers and removed
 * once stored; 409 taken as stored; 413 given up at once; a stop leaves unsent files on disk.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RecordingUploader, type RecordedFile } from '../../media-agent/recordings.ts';
import type { RecordingMessage } from '../../shared/agent-protocol.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('agent recording uploads');
let server: Server;
let url = '';
let dir = '';
let answer: (req: IncomingMessage, body: Buffer) => number = () => 201;
let holdMs = 0;
let inFlight = 0;
let most = 0;
const seen: Array<{ url: string; headers: IncomingMessage['headers']; body: Buffer }> = [];

t.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vd-uploads-'));
  server = createServer((req, res) => {
    inFlight++;
    most = Math.max(most, inFlight);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ url: req.url ?? '', headers: req.headers, body });
      setTimeout(() => {
        inFlight--;
        const status = answer(req, body);
        res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
      }, holdMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/agent/v1`;
});

t.after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

t.before.each(() => {
  seen.length = 0;
  most = 0;
  holdMs = 0;
  answer = () => 201;
});

function file(name: string, bytes = 2000): RecordedFile {
  const path = join(dir, `${name}.wav`);
  writeFileSync(path, Buffer.alloc(bytes, name.length));
  return { path, format: 'wav', bytes, written_at: new Date().toISOString() };
}

function uploader(reports: RecordingMessage[], opts = {}) {
  return new RecordingUploader({ controlUrl: url, token: 'tok-en', nodeId: 'node_u', report: (m) => reports.push(m), log: () => {} }, { retryBaseMs: 20, retryCapMs: 50, ...opts });
}

t('at most `concurrency` at once; each sent whole with its headers, reported first, removed once stored', async () => {
  holdMs = 150;
  const reports: RecordingMessage[] = [];
  const u = uploader(reports, { concurrency: 2 });
  const files = Array.from({ length: 6 }, (_, i) => file(`call_c${i}`));
  files.forEach((f, i) => u.add(`call_c${i}`, f));
  assert.is(reports.length, 6);
  assert.ok(reports.every((r) => r.type === 'recording.waiting_upload'));
  await eventually('all sent', () => u.pending === 0, 10_000);
  assert.is(most, 2, 'never more than 2 at once');
  assert.is(seen.length, 6);
  for (const s of seen) {
    assert.match(s.url, /^\/agent\/v1\/recordings\/call_c\d$/);
    assert.is(s.headers.authorization, 'Bearer tok-en');
    assert.is(s.headers['x-vd-node-id'], 'node_u');
    assert.is(s.headers['content-type'], 'audio/wav');
    assert.is(s.headers['content-length'], '2000');
    assert.is(s.body.length, 2000);
  }
  assert.ok(files.every((f) => !existsSync(f.path)), 'files removed');
});

t('409 is stored already (removed, nothing reported); 413 is given up at once; 503 tried again up to the attempts, then failed', async () => {
  const reports: RecordingMessage[] = [];
  const u = uploader(reports, { maxAttempts: 3 });
  answer = (req) => (req.url!.endsWith('call_dup') ? 409 : req.url!.endsWith('call_big') ? 413 : 503);
  const dup = file('call_dup');
  const big = file('call_big');
  const down = file('call_down');
  u.add('call_dup', dup);
  u.add('call_big', big);
  u.add('call_down', down);
  await eventually('all settled', () => u.pending === 0, 10_000);
  const failed = reports.filter((r) => r.type === 'recording.failed');
  assert.equal(failed.map((r) => [r.call_id, r.type === 'recording.failed' && r.attempts]).sort(), [['call_big', 1], ['call_down', 3]]);
  assert.is(seen.filter((s) => s.url.endsWith('call_down')).length, 3);
  assert.ok(![dup, big, down].some((f) => existsSync(f.path)));
});

t('a stop leaves the files not yet stored on disk, neither stored nor reported failed', async () => {
  holdMs = 300;
  const reports: RecordingMessage[] = [];
  const u = uploader(reports, { concurrency: 1 });
  const a = file('call_s1');
  const b = file('call_s2');
  u.add('call_s1', a);
  u.add('call_s2', b);
  await u.stop(0);
  await eventually('the one under way settled', () => u.pending === 0, 10_000);
  assert.not.ok(reports.some((r) => r.type === 'recording.failed'));
  assert.ok(existsSync(b.path), 'the waiting one is still on disk');
  assert.is(readFileSync(b.path).length, 2000);
});

t('resume: the recordings a previous run left (not half-written ones, nor other files) are reported and sent', async () => {
  const left = mkdtempSync(join(tmpdir(), 'vd-left-'));
  try {
    writeFileSync(join(left, 'call_left1.wav'), Buffer.alloc(1200, 1));
    writeFileSync(join(left, 'call_left2.mp3'), Buffer.alloc(900, 2));
    writeFileSync(join(left, 'call_left3.wav.part'), Buffer.alloc(50));
    writeFileSync(join(left, 'notes.txt'), 'x');
    const reports: RecordingMessage[] = [];
    const u = uploader(reports);
    assert.is(await u.resume(left), 2);
    await eventually('both sent', () => u.pending === 0, 10_000);
    assert.equal(reports.map((r) => [r.type, r.call_id, r.format, r.type === 'recording.waiting_upload' && r.bytes]).sort(), [
      ['recording.waiting_upload', 'call_left1', 'wav', 1200],
      ['recording.waiting_upload', 'call_left2', 'mp3', 900],
    ]);
    assert.equal(seen.map((s) => [s.url, s.headers['content-type'], s.body.length]).sort(), [
      ['/agent/v1/recordings/call_left1', 'audio/wav', 1200],
      ['/agent/v1/recordings/call_left2', 'audio/mpeg', 900],
    ]);
    assert.ok(existsSync(join(left, 'call_left3.wav.part')) && existsSync(join(left, 'notes.txt')), 'other files left alone');
    assert.is(await u.resume(join(left, 'missing')), 0);
  } finally {
    rmSync(left, { recursive: true, force: true });
  }
});

t.run();
