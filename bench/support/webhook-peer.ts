/**
 * The peer in the webhook bench: graphile-worker, a well-kept Postgres job queue for Node, with
 * its documented throughput settings (worker.graphile.org/docs/performance: concurrentJobs 24,
 * maxPoolSize 25, localQueue of 500, completeJobBatchDelay and failJobBatchDelay 0; new jobs
 * wake it by LISTEN/NOTIFY), in this process, on a fresh database of the same Postgres.
 *
 * A batch of events is one `addJobs` call (one statement, its own transaction) whose payloads are
 * the same envelopes our deliveries carry (the phone number masked as ours). Its task does what
 * our sender does for an attempt: the body, an HMAC-SHA256 signature with a fresh `t`, a POST with
 * undici's keep-alive pool, and a 2xx or an error (which graphile-worker retries).
 */
import { makeWorkerUtils, run, type Runner, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';
import { Agent } from 'undici';
import { signatureHeader } from '../../control-plane/webhooks/signature.ts';
import { maskPhoneNumbers } from '../../shared/masking.ts';
import { createTestDatabase } from '../../test/support/db.ts';
import { dataOf, SUBJECT, type System } from './webhook-load.ts';

const SECRET = 'whsec_bench_peer_secret_0123456789abcdef';

export async function startPeer(receiverUrl: string): Promise<System> {
  const db = await createTestDatabase();
  const url = new URL(`${receiverUrl}/hook`);
  const agent = new Agent({ connections: 64, pipelining: 1 });
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  // graphile-worker's pool, made as it makes its own (maxPoolSize 25), but ours: the database is
  // dropped with its connections at the end, and a client still open then reports an error that,
  // with nobody listening on its pool, ended the side's process (twice in a run of three rounds).
  const workerPool = new pg.Pool({ connectionString: db.url, max: 25 });
  for (const p of [pool, workerPool]) p.on('error', () => {}).on('connect', (client) => client.on('error', () => {}));
  let utils: WorkerUtils | undefined;
  let runner: Runner | undefined;
  const quiet = () => () => {};
  try {
    utils = await makeWorkerUtils({ pgPool: workerPool });
    await utils.migrate();
    runner = await run({
      pgPool: workerPool,
      concurrency: 24,
      noHandleSignals: true,
      logger: new (await import('graphile-worker')).Logger(quiet),
      preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
      taskList: {
        webhook: async (payload) => {
          const body = JSON.stringify(payload);
          const res = await agent.request({
            origin: url.origin,
            path: url.pathname,
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'user-agent': 'vd-webhooks/1',
              'x-service-event': SUBJECT,
              'x-service-delivery': (payload as { id: string }).id,
              'x-service-signature': signatureHeader(body, Math.floor(Date.now() / 1000), [SECRET]),
            },
            body,
            headersTimeout: 10_000,
            bodyTimeout: 10_000,
          });
          await res.body.dump();
          if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`answered ${res.statusCode}`);
        },
      },
    });
  } catch (err) {
    await runner?.stop().catch(() => {});
    await Promise.resolve(utils?.release()).catch(() => {});
    await pool.end().catch(() => {});
    await workerPool.end().catch(() => {});
    await db.drop();
    throw err;
  }
  const tenant = 'ten_bench_peer';
  let made = 0;
  return {
    async emit(first, count) {
      const at = new Date().toISOString();
      await utils!.addJobs(
        Array.from({ length: count }, (_, i) => {
          const n = first + i;
          return {
            identifier: 'webhook',
            payload: { id: `evt_bench_${n}`, tenant_id: tenant, at, source: 'control-plane', subject: SUBJECT, data: maskPhoneNumbers(dataOf(n)) },
          };
        }),
      );
      made = Math.max(made, first + count);
    },
    async finished() {
      // A job is deleted when it completes: every job made and none left means all finished.
      const { rows } = await pool.query<{ left: string }>('select count(*) as left from graphile_worker._private_jobs');
      return made - Number(rows[0].left);
    },
    async close() {
      try {
        await runner?.stop();
        await utils?.release();
        await agent.close();
        await pool.end();
        await workerPool.end();
      } finally {
        await db.drop();
      }
    },
  };
}
