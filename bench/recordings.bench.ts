/**
 * Recording uploads from agents: `PUT /agent/v1/recordings/{call_id}` of 100 KB WAV files, 64 at
 * once, for BENCH_SECONDS, against a fresh instance whose recording store is the folder (the
 * embedded default's kind), then one whose store is a bucket (s3rver behind the SigV4-checking
 * proxy, test/support/s3.ts). Each upload is a whole save: the call looked up, the file streamed
 * into the store with its duration read, then one transaction marking it stored with its event
 * and the "recording stored" hooks (the QA Bot's queueing).
 *
 * The instance runs in a child process (fresh Postgres database and Redis prefix); the calls to
 * upload to are rows written straight into its database (setting up thousands of dialed calls is
 * not what is measured). Prints JSON lines `recordings.upload_<store>`: uploads a second, MB a
 * second, p50/p99 ms, CPU seconds of the instance per 1,000 uploads (with the bucket, the
 * signature-checking proxy runs in the instance's process and is counted there; s3rver's own
 * process is counted apart), and the machine's load average before and after.
 *
 * Usage: node bench/recordings.bench.ts   (BENCH_SECONDS, BENCH_CONCURRENCY, BENCH_STORES=folder,bucket)
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { forkInstance, serveInstance, stopInstance } from './support/instance.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const FILE_BYTES = 100 * 1024;
const CALLS = 40_000;
const TOKEN = 'bench-agent-token-0123456789abcdef';
const NODE = 'node_bench';

type Ready = { url: string; callIds: string[]; pid: number };

/** The instance, with its recordings in a folder or (`bucket`) in an S3-compatible server it runs; and CALLS ended calls. */
async function serveRecordingsInstance(store: string): Promise<void> {
  const { startS3 } = await import('../test/support/s3.ts');
  let s3: Awaited<ReturnType<typeof startS3>> | null = null;
  await serveInstance({
    env: async () => {
      s3 = store === 'bucket' ? await startS3({ buckets: ['bench-recordings'] }) : null;
      const bucket: Record<string, string> = s3
        ? { VD_RECORDINGS_BUCKET: 'bench-recordings', VD_RECORDINGS_ENDPOINT: s3.endpoint, VD_RECORDINGS_REGION: s3.region, VD_RECORDINGS_ACCESS_KEY: s3.accessKey, VD_RECORDINGS_SECRET_KEY: s3.secretKey }
        : {};
      return { VD_AGENT_TOKEN: TOKEN, ...bucket };
    },
    cleanUp: async () => {
      await s3?.close();
    },
    ready: async (cp): Promise<Ready> => {
      const { makeCompany } = await import('../test/support/fixtures.ts');
      const { sql } = await import('kysely');
      const co = await makeCompany(cp, 'Bench Recordings');
      const rows = await sql<{ id: string }>`
        insert into calls (id, tenant_id, node_id, to_number, from_number, state, answered_at, ended_at, talk_seconds)
        select 'call_bench' || lpad(g::text, 6, '0'), ${co.tenantId}, ${NODE}, '+12025550100', '+12025550199', 'ended', now(), now(), 3
        from generate_series(1, ${CALLS}::int) g
        returning id`.execute(cp.services.store.db);
      return { url: cp.url, callIds: rows.rows.map((r) => r.id), pid: process.pid };
    },
  });
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux only, else NaN). */
function cpuSeconds(pid: number | null): number {
  if (pid === null) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

/** The process ids of `pid`'s children (s3rver under the instance), from /proc. */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const round = (x: number, d = 1) => Number(x.toFixed(d));

/** A 100 KB WAV: 8 kHz mono 16-bit, 6.4 s. */
async function wavFile(): Promise<Buffer> {
  const { wavHeader } = await import('../media-agent/wav.ts');
  return Buffer.concat([wavHeader(FILE_BYTES - 44), Buffer.alloc(FILE_BYTES - 44, 1)]);
}

async function measure(store: string): Promise<void> {
  const { child, ready } = await forkInstance<Ready>(fileURLToPath(import.meta.url), ['--instance', store]);
  const file = await wavFile();
  const pool = new Pool(ready.url, { connections: CONCURRENCY, pipelining: 1 });
  const upload = async (callId: string): Promise<number> => {
    const t = performance.now();
    const res = await pool.request({
      path: `/agent/v1/recordings/${callId}`,
      method: 'PUT',
      headers: { authorization: `Bearer ${TOKEN}`, 'x-vd-node-id': NODE, 'content-type': 'audio/wav', 'content-length': String(file.length) },
      body: file,
    });
    const text = await res.body.text();
    if (res.statusCode !== 201) throw new Error(`upload ${callId}: ${res.statusCode} ${text.slice(0, 200)}`);
    return performance.now() - t;
  };
  // A short warm-up (connections, JIT, the store's first files), not counted.
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, () => upload(ready.callIds[next++])));
  const load = loadavg().map((x) => round(x, 2));
  const others = childrenOf(ready.pid);
  const cpu0 = cpuSeconds(ready.pid);
  const s3cpu0 = others.reduce((s, p) => s + cpuSeconds(p), 0);
  const latencies: number[] = [];
  const started = performance.now();
  const end = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end && next < ready.callIds.length) latencies.push(await upload(ready.callIds[next++]));
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuSeconds(ready.pid) - cpu0;
  const s3cpu = others.reduce((s, p) => s + cpuSeconds(p), 0) - s3cpu0;
  latencies.sort((a, b) => a - b);
  const n = latencies.length;
  console.log(
    JSON.stringify({
      name: `recordings.upload_${store}`,
      concurrency: CONCURRENCY,
      file_bytes: FILE_BYTES,
      uploads: n,
      seconds: round(seconds, 2),
      uploads_per_s: round(n / seconds),
      mb_per_s: round((n * FILE_BYTES) / seconds / 1024 / 1024),
      p50_ms: round(pct(latencies, 50)),
      p99_ms: round(pct(latencies, 99)),
      instance_cpu_s_per_1000: round((cpu / n) * 1000, 2),
      ...(store === 'bucket' ? { s3_side_cpu_s_per_1000: round((s3cpu / n) * 1000, 2) } : {}),
      loadavg_before: load,
      loadavg_after: loadavg().map((x) => round(x, 2)),
    }),
  );
  await pool.close();
  await stopInstance(child);
}

if (process.argv[2] === '--instance') {
  await serveRecordingsInstance(process.argv[3]);
} else {
  for (const store of (process.env.BENCH_STORES ?? 'folder,bucket').split(',')) await measure(store);
}
