/**
 * The parts behind `/ops/services` and `/ai/health` that need no HTTP: the 5-minute window of
 * server errors at its edges (a moved clock), and the buffer of AI samples (batches, its bound,
 * what it writes) on the embedded store.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openPglite, type Store } from '../../control-plane/infra/db/store.ts';
import { AiSampleBuffer, pruneAiSamples, samplesOf } from '../../control-plane/ai/samples.ts';
import { aiFigures } from '../../control-plane/ai/health.ts';
import { ServerErrorWindow } from '../../control-plane/infra/instances/server-errors.ts';
import { Instances, localOnly } from '../../control-plane/infra/instances/instances.ts';
import { Writable } from 'node:stream';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { opsServices } from '../../control-plane/service-checks/services.ts';
import { OutboundClient } from '../../control-plane/infra/outbound-http/guarded-client.ts';
import { BucketStore } from '../../control-plane/recordings/bucket-store.ts';
import { MemoryCoordinator } from '../../control-plane/infra/coordination/memory.ts';
import { eventually, loadScale } from '../support/eventually.ts';
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

t('figures on the embedded store: percentiles interpolated, the bot apart from the other purposes, nulls without samples', async () => {
  await store.db.deleteFrom('ai_samples').execute();
  const none = { p50: null, p95: null };
  assert.equal(await aiFigures(store), { reply_ms: none, reply_ms_by_purpose: { bot: none, qa: none, transcription: none }, sessions: { live: null, failed: null }, figures_timed_out: false });
  const buffer = new AiSampleBuffer({ store, log: createLogger('silent'), instanceId: 'i-a' });
  buffer.add(samplesOf({ node_id: 'n', message: { type: 'bot.session', call_id: 'k1', event: 'ended', reply_ms: [10, 20, 30, 40] } }, 'i-a', new Date()));
  await buffer.stop();
  // Sorted 10..40: p50 at 1.5 (25), p95 at 2.85 (38.5); one session ended, none failed or live.
  assert.equal(await aiFigures(store), { reply_ms: { p50: 25, p95: 38.5 }, reply_ms_by_purpose: { bot: { p50: 25, p95: 38.5 }, qa: none, transcription: none }, sessions: { live: 0, failed: 0 }, figures_timed_out: false });
  // A QA Bot scoring and a transcription (whole recordings) are their own purposes' times, not the bot's turns.
  buffer.add([
    { purpose: 'qa', kind: 'reply', ok: true, reply_ms: 5000, instance: 'i-b' },
    { purpose: 'qa', kind: 'reply', ok: true, reply_ms: 7000, instance: 'i-b' },
    { purpose: 'transcription', kind: 'reply', ok: true, reply_ms: 60_000, instance: 'i-b' },
  ]);
  await buffer.flush();
  const f = await aiFigures(store);
  assert.equal(f.reply_ms, { p50: 25, p95: 38.5 });
  assert.equal(f.reply_ms_by_purpose, { bot: { p50: 25, p95: 38.5 }, qa: { p50: 6000, p95: 6900 }, transcription: { p50: 60_000, p95: 60_000 } });
});

t('old samples are deleted by time in batches: 16 minutes kept, older gone whatever their number', async () => {
  await store.db.deleteFrom('ai_samples').execute();
  const at = (msAgo: number, n: number) => Array.from({ length: n }, () => ({ purpose: 'bot' as const, kind: 'reply' as const, ok: true, reply_ms: 1, instance: 'i-p', at: new Date(Date.now() - msAgo) }));
  const { recordAiSample } = await import('../../control-plane/ai/providers.ts');
  await recordAiSample(store, at(16 * 60_000 + 10_000, 2_501));
  await recordAiSample(store, at(3 * 86_400_000, 10));
  await recordAiSample(store, at(16 * 60_000 - 10_000, 7));
  await recordAiSample(store, at(0, 3));
  // 2,511 old ones in batches of 500: six statements, the last one short.
  assert.is(await pruneAiSamples(store, { batch: 500, budgetMs: 60_000 }), 2_511);
  const left = await store.db.selectFrom('ai_samples').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  assert.is(Number(left.n), 10, 'the samples of the last 16 minutes stay');
  assert.is(await pruneAiSamples(store, { batch: 500 }), 0);
  // Its time budget spent, it stops after the batch under way (the next beat goes on).
  await recordAiSample(store, at(20 * 60_000, 1_000));
  assert.is(await pruneAiSamples(store, { batch: 100, budgetMs: 0 }), 100);
  await store.db.deleteFrom('ai_samples').execute();
});

t('an instance registering a loopback or unspecified address beside other instances warns to set VD_INSTANCE_URL', async () => {
  for (const [url, local] of [
    ['http://127.0.0.1:8080', true],
    ['http://127.9.9.9:1', true],
    ['http://localhost:8080', true],
    ['http://0.0.0.0:8080', true],
    ['http://[::1]:8080', true],
    ['http://[::]:8080', true],
    ['http://10.0.0.5:8080', false],
    ['http://cp-1.internal:8080', false],
    ['http://128.0.0.1:1', false],
  ] as const)
    assert.is(localOnly(url), local, url);
  const register = async (id: string, url: string): Promise<string> => {
    let text = '';
    const log = createLogger('warn', new Writable({ write: (c, _e, cb) => ((text += c.toString()), cb()) }));
    const i = new Instances({ store, log, instanceId: id });
    await i.register(url);
    await i.stop();
    return text;
  };
  await store.db.deleteFrom('cp_instances').execute();
  assert.not.match(await register('alone', 'http://127.0.0.1:1'), 'VD_INSTANCE_URL', 'alone: nothing to confuse it with');
  await store.db.insertInto('cp_instances').values({ instance_id: 'other', url: 'http://10.0.0.9:1', version: '1', started_at: new Date() }).execute();
  assert.match(await register('loop', 'http://127.0.0.1:1'), 'VD_INSTANCE_URL');
  assert.match(await register('any', 'http://0.0.0.0:1'), 'VD_INSTANCE_URL');
  assert.not.match(await register('routable', 'http://10.0.0.8:1'), 'VD_INSTANCE_URL');
  await store.db.deleteFrom('cp_instances').execute();
});

t('/ops/services with a hanging bucket: the recording store fails at the limit and its request, socket and all, ends there', async () => {
  const sockets: Socket[] = [];
  const closed: number[] = [];
  const hanging = createServer(() => {});
  hanging.on('connection', (sk) => {
    sockets.push(sk);
    sk.on('close', () => closed.push(performance.now()));
  });
  await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
  const client = new OutboundClient({ allowPrivate: true });
  const bucket = new BucketStore({ endpoint: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`, bucket: 'b', region: 'us-east-1', accessKey: 'k', secretKey: 's' }, client, '/tmp');
  const coordinator = new MemoryCoordinator();
  try {
    const started = performance.now();
    // The limit and the bounds below are stretched by the machine's load: at load 20 the 400 ms
    // ran out before the request had even connected ('the bucket was asked' failed).
    const { items } = await opsServices({ store, coordinator, instances: new Instances({ store, log: createLogger('silent'), instanceId: 'i-ops' }), aiClient: client, recordings: bucket }, 400 * loadScale());
    const answered = performance.now();
    const rec = items.find((i) => i.kind === 'recording_store')!;
    assert.equal([rec.status, rec.instance, rec.answer_ms], ['fail', 'bucket', null]);
    assert.ok(answered - started < 2_500 * loadScale(), `answered in ${Math.round(answered - started)} ms`);
    assert.ok(sockets.length >= 1, 'the bucket was asked');
    // The check's own wait is 5 s; ended at the limit, its socket closes at once.
    // (Well before the check's own 5 s wait, with room for a loaded machine.)
    await eventually('the sockets to the hanging bucket closed', async () => closed.length === sockets.length, 2_500);
    assert.ok(closed[0] - answered < 2_500 * loadScale(), `closed ${Math.round(closed[0] - answered)} ms after the answer`);
    // Its check() on its own: ended by its signal, not its 5 s wait.
    const ask = performance.now();
    const c = await bucket.check(AbortSignal.timeout(200));
    assert.is(c.status, 'fail');
    assert.ok(performance.now() - ask < 2_500, `check ended in ${Math.round(performance.now() - ask)} ms`);
  } finally {
    for (const sk of sockets) sk.destroy();
    hanging.close();
    await client.close();
    await coordinator.close();
  }
});

t.run();
