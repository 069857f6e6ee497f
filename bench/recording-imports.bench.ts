/**
 * A recording import run from a bucket: 500 files of 1 MB (BENCH_FILES, BENCH_FILE_KB) in a real
 * s3rver behind the SigV4-checking proxy (test/support/s3.ts; the proxy runs in this process,
 * s3rver in its own), imported by one run (per_run 500) of a control plane in a child process on
 * a fresh Postgres database, into its folder recording store under a temporary VD_DATA_DIR.
 *
 * Prints one JSON line per run, `recording_import.run`: files a second and MB a second (from the
 * run's started_at to its finished_at in the store, and from the POST to the moment the run was
 * seen done), the instance's CPU seconds, and for the first run its resident memory sampled every
 * 10 ms from /proc against its idle size after a warm-up run of 20 files (goal: flat, under
 * 100 MB more); and the machine's load average before and after. Each run imports the same keys
 * through a connection of its own (a file is imported once per connection).
 *
 * Usage: node bench/recording-imports.bench.ts   (BENCH_RUNS default 2, BENCH_FILES, BENCH_FILE_KB)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from '../test/support/db.ts';
import { makeCompany } from '../test/support/fixtures.ts';
import { call, type Session } from '../test/support/http.ts';
import { deleteRedisPrefix, startControlPlaneProcess, stopProcess } from '../test/support/processes.ts';
import { putObjects, wavFile } from '../test/support/recording-sources.ts';
import { startS3 } from '../test/support/s3.ts';
import { startTestServer } from '../test/support/server.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 2);
/** At most 500: one run takes at most 500 files (the spec's largest per_run). */
const FILES = Math.min(500, Number(process.env.BENCH_FILES ?? 500));
const FILE_BYTES = Number(process.env.BENCH_FILE_KB ?? 1024) * 1024;
const WARM_FILES = 20;
const BUCKET = 'bench-imports';
const CONNECTORS = '/api/integrations/v1/connectors';

const load = () => loadavg().map((x) => Math.round(x * 100) / 100);
const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`the instance (pid ${pid}) has exited:\n${child?.output().slice(-4000)}`);
  return Number(m[1]) / 1024;
};
/** The process's user + system CPU seconds so far. */
const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

const db = await createTestDatabase();
const prefix = testRedisPrefix();
const dataDir = mkdtempSync(join(tmpdir(), 'vd-bench-imports-'));
const sql = new pg.Pool({ connectionString: db.url, max: 2 });
const s3 = await startS3({ buckets: [BUCKET] });
let child: Awaited<ReturnType<typeof startControlPlaneProcess>> | undefined;
try {
  const body = wavFile(FILE_BYTES);
  await putObjects(s3, BUCKET, Array.from({ length: FILES }, (_, i) => ({ key: `run/rec-${String(i).padStart(4, '0')}.wav`, data: body })), 16);
  await putObjects(s3, BUCKET, Array.from({ length: WARM_FILES }, (_, i) => ({ key: `warm/rec-${i}.wav`, data: body })), 8);

  // The company is made by an instance in this process, which then stops; the measured instance
  // is a process of its own on the same database.
  const setupCp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  const co = await makeCompany(setupCp, 'Bench Imports');
  await setupCp.close();
  child = await startControlPlaneProcess({
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    VD_REDIS_KEY_PREFIX: prefix,
    VD_ALLOW_PRIVATE_TARGETS: '1',
    VD_DATA_DIR: dataDir,
    VD_METRICS_PORT: '0',
    VD_RATE_LIMIT_PER_SECOND: '1000000',
    VD_RATE_LIMIT_BURST: '1000000',
  });
  const pid = child.proc.pid!;
  const owner: Session = co.owner;

  const connection = async (name: string, folder: string) => {
    const a = await call(child!.url, 'POST', CONNECTORS, {
      session: owner,
      body: { kind: 'recording_import', name, source: 'bucket', check_every_minutes: 0, per_run: 500, bucket: BUCKET, endpoint: s3.endpoint, prefix: folder, access_key: s3.accessKey, secret_key: s3.secretKey },
    });
    if (a.status !== 201) throw new Error(`connection: ${a.status} ${a.text}`);
    return a.body.id as string;
  };
  const runOnce = async (con: string, files: number) => {
    const posted = performance.now();
    const a = await call(child!.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner });
    if (a.status !== 202) throw new Error(`run: ${a.status} ${a.text}`);
    for (;;) {
      const r = (await sql.query(`select status, imported, failed, error, extract(epoch from finished_at - started_at) * 1000 as ms from recording_import_runs where id = $1`, [a.body.run.id])).rows[0];
      if (r.status === 'done' || r.status === 'failed') {
        const seenMs = performance.now() - posted;
        if (r.status !== 'done' || r.imported !== files) throw new Error(`run ended ${r.status}: ${r.imported} imported, ${r.failed} failed, ${r.error}\n${child!.output().slice(-4000)}`);
        return { runMs: Number(r.ms), seenMs };
      }
      await new Promise((res) => setTimeout(res, 20));
    }
  };

  // Warm-up: the code paths and connections of an import, then the idle size.
  await runOnce(await connection('Warm-up', 'warm/'), WARM_FILES);
  await new Promise((res) => setTimeout(res, 2000));
  const idle = rssMb(pid);

  for (let i = 0; i < RUNS; i++) {
    const con = await connection(`Bench ${i}`, 'run/');
    const loadBefore = load();
    const cpuBefore = cpuSeconds(pid);
    let peak = rssMb(pid);
    let sampleError: unknown = null;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, rssMb(pid));
      } catch (err) {
        sampleError ??= err;
      }
    }, 10);
    const { runMs, seenMs } = await runOnce(con, FILES).finally(() => clearInterval(sampler));
    if (sampleError) throw sampleError;
    const mb = (FILES * FILE_BYTES) / 1024 / 1024;
    console.log(
      JSON.stringify({
        bench: 'recording_import.run',
        run: i + 1,
        files: FILES,
        file_bytes: FILE_BYTES,
        run_ms: Math.round(runMs),
        files_per_s: Math.round((FILES / runMs) * 1000 * 10) / 10,
        mb_per_s: Math.round((mb / runMs) * 1000 * 10) / 10,
        seen_done_ms: Math.round(seenMs),
        instance_cpu_s: Math.round((cpuSeconds(pid) - cpuBefore) * 100) / 100,
        memory: { idle_rss_mb: Math.round(idle), peak_rss_mb: Math.round(peak), growth_mb: Math.round(peak - idle), goal_growth_mb: 100 },
        load_before: loadBefore,
        load_after: load(),
      }),
    );
  }
} finally {
  await stopProcess(child?.proc).catch(() => {});
  await s3.close();
  await sql.end();
  await db.drop();
  await deleteRedisPrefix(prefix);
  rmSync(dataDir, { recursive: true, force: true });
}
