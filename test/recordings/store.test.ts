/**
 * The recording store's contract, run on both implementations: the folder under a temporary
 * VD_DATA_DIR and the bucket on a real s3rver behind an independent SigV4 check
 * (test/support/s3.ts). Limits at their edge; a failed put leaves nothing; a wrong secret is refused.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { OutboundClient } from '../../control-plane/infra/outbound-http/guarded-client.ts';
import { AudioInfo } from '../../control-plane/recordings/audio-info.ts';
import { BucketStore } from '../../control-plane/recordings/bucket-store.ts';
import { FolderStore } from '../../control-plane/recordings/folder-store.ts';
import { RecordingIncomplete, RecordingTooLarge, type RecordingStore } from '../../control-plane/recordings/store.ts';
import { wavHeader } from '../../media-agent/wav.ts';
import { startS3, type S3Harness } from '../support/s3.ts';

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** A body in chunks of 16 KB, as a request would stream it. */
function chunked(data: Buffer): Readable {
  return Readable.from((function* () {
    for (let i = 0; i < data.length; i += 16 * 1024) yield data.subarray(i, i + 16 * 1024);
  })());
}

/** A body that sends `data` and then breaks off. */
function breaking(data: Buffer): Readable {
  return new Readable({
    read() {
      this.push(data);
      this.destroy(new Error('peer went away'));
    },
  });
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function contract(name: string, make: () => { store: RecordingStore; files: () => Promise<string[]> }) {
  const t = suite(`recording store contract: ${name}`);
  let store: RecordingStore;
  let files: () => Promise<string[]>;
  t.before.each(() => {
    ({ store, files } = make());
  });

  t('put streams a file in and get streams the same bytes out, with its size', async () => {
    const data = Buffer.concat([wavHeader(200_000), randomBytes(200_000)]);
    const key = `ten_a/rec_${randomBytes(4).toString('hex')}.wav`;
    const put = await store.put(key, chunked(data), { maxBytes: data.length, contentType: 'audio/wav', length: data.length });
    assert.is(put.bytes, data.length);
    const got = await store.get(key);
    assert.ok(got);
    assert.is(got!.size, data.length);
    assert.is(sha(await readAll(got!.body)), sha(data));
  });

  t('a body of unknown length is taken too (the bucket spools it to learn its length)', async () => {
    const data = randomBytes(70_000);
    const key = `ten_a/rec_${randomBytes(4).toString('hex')}.mp3`;
    const put = await store.put(key, chunked(data), { maxBytes: 70_000, contentType: 'audio/mpeg' });
    assert.is(put.bytes, 70_000);
    assert.is(sha(await readAll((await store.get(key))!.body)), sha(data));
  });

  t('a byte range reads only that part, with the whole size', async () => {
    const data = randomBytes(10_000);
    const key = `ten_a/rec_${randomBytes(4).toString('hex')}.wav`;
    await store.put(key, chunked(data), { maxBytes: 10_000, contentType: 'audio/wav', length: 10_000 });
    const got = await store.get(key, { start: 100, end: 1099 });
    assert.is(got!.size, 10_000);
    assert.equal(got!.range, { start: 100, end: 1099 });
    assert.ok((await readAll(got!.body)).equals(data.subarray(100, 1100)));
  });

  t('the size limit at its edge: exactly maxBytes is stored, one byte more fails and leaves nothing', async () => {
    const limit = 50_000;
    const atLimit = `ten_b/rec_${randomBytes(4).toString('hex')}.wav`;
    await store.put(atLimit, chunked(randomBytes(limit)), { maxBytes: limit, contentType: 'audio/wav' });
    assert.is((await store.get(atLimit))!.size, limit);
    const over = `ten_b/rec_${randomBytes(4).toString('hex')}.wav`;
    for (const length of [undefined, limit + 1]) {
      try {
        await store.put(over, chunked(randomBytes(limit + 1)), { maxBytes: limit, contentType: 'audio/wav', length });
        assert.unreachable('one byte over the limit was taken');
      } catch (err) {
        assert.instance(err, RecordingTooLarge);
      }
      assert.is(await store.get(over), null, 'nothing kept');
    }
    assert.not.ok((await files()).some((f) => f.includes('.part')), 'no temporary file left');
  });

  t('a body that breaks off, or is shorter than declared, fails and leaves nothing', async () => {
    const key = `ten_c/rec_${randomBytes(4).toString('hex')}.wav`;
    try {
      await store.put(key, breaking(randomBytes(20_000)), { maxBytes: 1_000_000, contentType: 'audio/wav', length: 40_000 });
      assert.unreachable('a broken body was taken');
    } catch (err) {
      assert.instance(err, RecordingIncomplete);
    }
    try {
      await store.put(key, chunked(randomBytes(20_000)), { maxBytes: 1_000_000, contentType: 'audio/wav', length: 20_001 });
      assert.unreachable('a short body was taken');
    } catch (err) {
      assert.instance(err, RecordingIncomplete);
    }
    assert.is(await store.get(key), null);
    assert.not.ok((await files()).some((f) => f.includes('.part')), 'no temporary file left');
  });

  t('delete removes a file; deleting a missing one is fine; a missing file reads as null', async () => {
    const key = `ten_d/rec_${randomBytes(4).toString('hex')}.wav`;
    await store.put(key, chunked(randomBytes(1000)), { maxBytes: 1000, contentType: 'audio/wav', length: 1000 });
    await store.delete(key);
    assert.is(await store.get(key), null);
    await store.delete(key);
  });

  t('keys that are not ours are refused before they name a path', async () => {
    for (const key of ['../etc/passwd.wav', 'a/../../b.wav', '/abs.wav', 'a b.wav', 'x.txt']) {
      try {
        await store.put(key, chunked(Buffer.from('x')), { maxBytes: 10, contentType: 'audio/wav' });
        assert.unreachable(key);
      } catch (err) {
        assert.match((err as Error).message, /not a recording store key/);
      }
    }
  });

  t('check() passes on a working store', async () => {
    const c = await store.check();
    assert.is(c.status, 'pass', c.message);
  });

  t('the duration is read while the file streams past (WAV header)', async () => {
    const info = new AudioInfo('wav');
    const data = Buffer.concat([wavHeader(8000 * 2 * 3), Buffer.alloc(8000 * 2 * 3)]);
    await store.put(`ten_e/rec_${randomBytes(4).toString('hex')}.wav`, chunked(data), { maxBytes: data.length, contentType: 'audio/wav', onChunk: (c) => info.push(c) });
    assert.is(info.duration(), 3);
  });

  return t;
}

const folderDir = mkdtempSync(join(tmpdir(), 'vd-rec-folder-'));
const listFiles = async (dir: string) => (readdirSync(dir, { recursive: true }) as string[]).map(String);
const folder = contract('folder', () => ({ store: new FolderStore(folderDir), files: () => listFiles(folderDir) }));
folder.after(() => rmSync(folderDir, { recursive: true, force: true }));
folder.run();

let s3: S3Harness;
const client = new OutboundClient({ allowPrivate: true, timeoutMs: 10_000 });
const spool = mkdtempSync(join(tmpdir(), 'vd-rec-spool-'));
const bucketSettings = () => ({ endpoint: s3.endpoint, bucket: 'recordings', region: s3.region, accessKey: s3.accessKey, secretKey: s3.secretKey });
const bucket = contract('bucket (s3rver behind a SigV4 check)', () => ({
  store: new BucketStore(bucketSettings(), client, spool),
  files: async () => listFiles(spool),
}));
bucket.before(async () => {
  s3 = await startS3();
});

bucket('a wrong secret is refused by the signature check (403), and check() says so', async () => {
  const refusedBefore = s3.counts.refused;
  const wrong = new BucketStore({ ...bucketSettings(), secretKey: 'not-the-secret' }, client, spool);
  const key = `ten_f/rec_${randomBytes(4).toString('hex')}.wav`;
  try {
    await wrong.put(key, chunked(randomBytes(1000)), { maxBytes: 1000, contentType: 'audio/wav', length: 1000 });
    assert.unreachable('a wrong secret was taken');
  } catch (err) {
    assert.match((err as Error).message, /403 SignatureDoesNotMatch/);
  }
  const c = await wrong.check();
  assert.is(c.status, 'fail');
  assert.match(c.message, /403/);
  assert.ok(s3.counts.refused >= refusedBefore + 2, 'the proxy refused them');
  assert.is(await new BucketStore(bucketSettings(), client, spool).get(key), null, 'nothing reached the bucket');
});

bucket('signed requests for keys with spaces, +, (, ), *, ! and non-ASCII pass the independent check and round-trip', async () => {
  const { bucket: b } = new BucketStore(bucketSettings(), client, spool);
  for (const key of ['calls/a b/c+d(1)*!/ünïcødé 録音.wav', "x/it's ~ok.mp3"]) {
    const data = randomBytes(3000);
    const put = await b.send({ method: 'PUT', key, headers: { 'content-length': '3000', 'content-type': 'audio/wav' }, body: Readable.from([data]) });
    assert.ok(put.kind === 'answered' && put.status === 200, `PUT ${key}: ${put.kind === 'answered' ? put.status : put.message}`);
    if (put.kind === 'answered') put.body.resume();
    const got = await b.send({ method: 'GET', key });
    assert.ok(got.kind === 'answered' && got.status === 200, `GET ${key}`);
    if (got.kind === 'answered') assert.ok((await readAll(got.body)).equals(data), key);
  }
});

bucket('the bucket server gone: put fails with a store error, check() fails; back: both work', async () => {
  const store = new BucketStore(bucketSettings(), client, spool);
  await s3.killServer();
  try {
    await store.put(`ten_g/rec_${randomBytes(4).toString('hex')}.wav`, chunked(randomBytes(1000)), { maxBytes: 1000, contentType: 'audio/wav', length: 1000 });
    assert.unreachable('stored with the server down');
  } catch (err) {
    assert.match((err as Error).message, /could not be stored/);
  }
  assert.is((await store.check()).status, 'fail');
  await s3.startServer();
  assert.is((await store.check()).status, 'pass');
});

bucket.after(async () => {
  await client.close();
  await s3?.close();
  rmSync(spool, { recursive: true, force: true });
});
bucket.run();
