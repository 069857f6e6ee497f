/**
 * The parts behind `/ops/services` and `/ai/health` that need no HTTP: the 5-minute window of
 * server errors at its edges (a moved clock), and the buffer of AI samples (batches, its bound,
 * what it writes) on the embedded store.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openPglite, type Store } from '../../control-plane/db/store.ts';
import { AiSampleBuffer, samplesOf } from '../../control-plane/ai/samples.ts';
import { aiFigures } from '../../control-plane/ai/health.ts';
import { ServerErrorWindow } from '../../control-plane/ops/server-errors.ts';
import { createLogger } from '../../shared/logger.ts';

const t = suite('operations parts');
let store: Store;

t.before(async () => {
  store = await openPglite(null);
  await store.migrate();
});

t.after(async () => {
  await store?.close();
});

t('server errors: counted for 300 seconds, gone at the 301st; buckets reused', () => {
  let now = 1_800_000_000_000;
  const w = new ServerErrorWindow(() => now);
  assert.is(w.count(), 0);
  w.add();
  w.add();
  now += 1000;
  w.add();
  assert.is(w.count(), 3);
  now += 298_000; // 299 s after the first two
  assert.is(w.count(), 3, 'the first second is still in the window');
  now += 1000; // 300 s after the first two
  assert.is(w.count(), 1, 'the first second has left it');
  now += 1000;
  assert.is(w.count(), 0);
  // The slot of the first second again, 600 s later: counted afresh.
  now = 1_800_000_000_000 + 600_000;
  w.add();
  assert.is(w.count(), 1);
});

t('a bot-session report becomes one sample: its event, with the reply times it carried', () => {
  const at = new Date('2026-11-26T01:00:00.000Z');
  const s = samplesOf({ node_id: 'n1', message: { type: 'bot.session', call_id: 'c1', event: 'failed', reply_ms: [10, 20] } }, 'i-1', at);
  assert.equal(
    s.map((x) => [x.kind, x.ok, x.reply_ms ?? null, x.reply_times, x.call_id, x.node_id, x.instance, x.at?.toISOString()]),
    [['session_failed', false, null, [10, 20], 'c1', 'n1', 'i-1', at.toISOString()]],
  );
  assert.equal(samplesOf({ node_id: 'n1', message: { type: 'bot.session', call_id: 'c1', event: 'ended', reply_ms: [] } }, 'i-1', at)[0].reply_times, null);
  const own = samplesOf({ node_id: 'n1', message: { type: 'bot.session', call_id: 'c2', event: 'started', at: '2026-11-26T00:59:00.000Z' } }, 'i-1', at);
  assert.equal(own.map((x) => x.at?.toISOString()), ['2026-11-26T00:59:00.000Z'], "the agent's own time");
});

t('the buffer writes in batches; at its bound it keeps all, one past drops the oldest', async () => {
  const log = createLogger('silent');
  const buffer = new AiSampleBuffer({ store, log, instanceId: 'i-buf' }, { flushEveryMs: 60_000, batchSize: 1000, maxBuffered: 2500 });
  const reply = (ms: number) => ({ purpose: 'bot' as const, kind: 'reply' as const, ok: true, reply_ms: ms, instance: 'i-buf' });
  // 999 samples, below a batch: nothing is written until the timer (a minute here) or a full batch.
  buffer.add(Array.from({ length: 999 }, (_, i) => reply(i)));
  const count = async () => Number((await store.db.selectFrom('ai_samples').select((eb) => eb.fn.countAll<string>().as('n')).where('instance', '=', 'i-buf').executeTakeFirstOrThrow()).n);
  assert.is(await count(), 0, 'below a batch: waits for the timer');
  buffer.add([reply(999)]);
  await buffer.flush();
  assert.is(await count(), 1000, 'a full batch is written');
  await store.db.deleteFrom('ai_samples').execute();
  const big = new AiSampleBuffer({ store, log, instanceId: 'i-buf' }, { flushEveryMs: 60_000, batchSize: 100_000, maxBuffered: 2500 });
  big.add(Array.from({ length: 2500 }, (_, i) => reply(i)));
  await big.flush();
  assert.is(await count(), 2500, 'at the bound: all kept');
  await store.db.deleteFrom('ai_samples').execute();
  big.add(Array.from({ length: 2501 }, (_, i) => reply(i)));
  await big.flush();
  assert.is(await count(), 2500, 'one past: one dropped');
  const least = await store.db.selectFrom('ai_samples').select((eb) => eb.fn.min('reply_ms').as('m')).executeTakeFirstOrThrow();
  assert.is(least.m, 1, 'the oldest went');
  await buffer.stop();
  await big.stop();
});

t('figures on the embedded store: percentiles interpolated, nulls without samples', async () => {
  await store.db.deleteFrom('ai_samples').execute();
  assert.equal(await aiFigures(store), { reply_ms: { p50: null, p95: null }, sessions: { live: null, failed: null } });
  const buffer = new AiSampleBuffer({ store, log: createLogger('silent'), instanceId: 'i-a' });
  buffer.add(samplesOf({ node_id: 'n', message: { type: 'bot.session', call_id: 'k1', event: 'ended', reply_ms: [10, 20, 30, 40] } }, 'i-a', new Date()));
  await buffer.stop();
  // Sorted 10..40: p50 at 1.5 (25), p95 at 2.85 (38.5); one session ended, none failed or live.
  assert.equal(await aiFigures(store), { reply_ms: { p50: 25, p95: 38.5 }, sessions: { live: 0, failed: 0 } });
  // A QA Bot reply (one time per sample) joins the bot sessions' times: 10, 20, 30, 40, 50.
  buffer.add([{ purpose: 'qa', kind: 'reply', ok: true, reply_ms: 50, instance: 'i-b' }]);
  await buffer.flush();
  assert.equal((await aiFigures(store)).reply_ms, { p50: 30, p95: 48 });
});

t.run();
