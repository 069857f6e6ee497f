/**
 * The built-in simulated trunk: each call rings, then is answered, busy, unanswered or fails, by
 * a seeded random schedule (the same seed and call id give the same call), or by the test number
 * it is placed to (`TEST_NUMBERS`: `…0200` answers, `…0486` busy, …). A call rings (180) a
 * second after its INVITE. Answered calls talk a while; bot-handled ones run a bot session
 * (reported as it starts, and as it ends or fails with the AI upstream's reply times, what it
 * learned told just before its end: `botFacts`) that sometimes hands the call over to a person
 * (`transfer` events: requested when the bot session ends, bridged 1–3 s later, completed just
 * before the call ends).
 * `timeScale` compresses the clock (0.01: a 60 s call lasts 0.6 s) so tests run fast; reported
 * durations stay in simulated seconds.
 */
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { wavHeader } from './wav.ts';
import type { RecordedFile } from './recordings.ts';
import { MAX_REPLY_TIMES } from '../shared/agent-protocol.ts';
import type { Trunk, TrunkCall, TrunkEvent } from './trunk.ts';

export type SimulatedOutcome = 'random' | 'answer' | 'busy' | 'no_answer' | 'failed' | 'abandoned';

export type SimulatedTrunkOptions = {
  seed: number;
  /** Real time = simulated time × timeScale. */
  timeScale?: number;
  /** Forces every call's outcome, test numbers included (tests); `random` draws it, or takes a test number's. */
  outcome?: SimulatedOutcome;
  /** Forces the talk time of answered calls, in simulated seconds (tests). */
  talkSeconds?: number;
  /**
   * Records answered calls into this folder: a real WAV (8 kHz mono 16-bit PCM, a quiet 440 Hz
   * tone) as long as the call's talk time in simulated seconds. Unset: no recordings (the bench).
   */
  recordDir?: string;
};

const RATE = 8000;
/** One second of the tone: 440 whole cycles, so seconds join without a click. */
const TONE_SECOND = (() => {
  const b = Buffer.alloc(RATE * 2);
  for (let i = 0; i < RATE; i++) b.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / RATE)), i * 2);
  return b;
})();

/**
 * Writes `seconds` of the tone as a WAV file at `path`, a second at a time (never the whole file
 * in memory), under a temporary name renamed once whole: a file found at `path` is complete.
 */
export async function writeToneWav(path: string, seconds: number): Promise<number> {
  const dataBytes = Math.round(seconds * RATE) * 2;
  const temp = `${path}.part`;
  const file = await open(temp, 'w');
  try {
    await file.write(wavHeader(dataBytes, RATE));
    for (let left = dataBytes; left > 0; left -= TONE_SECOND.length) await file.write(TONE_SECOND, 0, Math.min(left, TONE_SECOND.length));
  } finally {
    await file.close();
  }
  await rename(temp, path);
  return 44 + dataBytes;
}

/** mulberry32: a small, fast, seeded PRNG; returns floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Test numbers: a callee number ending in one of these has that outcome whatever the draw (unless
 * the trunk forces one for every call), so integrators and tests can pick an outcome per person.
 * `0299` is answered and then abandoned: nobody takes it within 2 s.
 */
export const TEST_NUMBERS: Readonly<Record<string, Exclude<SimulatedOutcome, 'random'>>> = {
  '0200': 'answer',
  '0486': 'busy',
  '0480': 'no_answer',
  '0503': 'failed',
  '0299': 'abandoned',
};

/** Mixed into a call's seed for its bot session's draws. */
const BOT_SALT = 0x0b07_5e55;
/** Mixed into a call's seed for what its bot learns (its own generator: the other draws stay). */
const FACT_SALT = 0x0fac_7500;
/** Simulated seconds from the INVITE to the far end's 180. */
const RING_AFTER_S = 1;

/** One thing a bot learned on a call. */
export type BotFact = { key: string; value: string | number | boolean };

/**
 * What the simulated bot learns on an answered call: whether the person is interested, and for
 * half the calls the best time to call back and the number to call them on (the callee's own:
 * a phone number, so webhooks mask it).
 */
export function botFacts(call: TrunkCall, seed: number): BotFact[] {
  const rnd = mulberry32(seed);
  const facts: BotFact[] = [{ key: 'interested', value: rnd() < 0.5 }];
  if (rnd() < 0.5) {
    facts.push({ key: 'best_time', value: (['morning', 'afternoon', 'evening'] as const)[Math.floor(rnd() * 3)] });
    facts.push({ key: 'callback_number', value: call.to });
  }
  return facts;
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

type Ended = Extract<TrunkEvent, { type: 'ended' }>;

type Live = {
  timers: Set<NodeJS.Timeout>;
  answeredAt: number | null;
  botSeconds?: number;
  /** How far the hand-over to a person has gone. */
  transfer: 'none' | 'requested' | 'bridged';
  /** The bot session while it runs: when it started, its own seeded draws (reply times, failure), and what it learns. */
  bot: { startedAt: number; rnd: () => number; facts: BotFact[] } | null;
  done: boolean;
  emit: (e: TrunkEvent) => void;
};

/**
 * The simulated schedule of one call, in simulated seconds. A transferred call's `talk_s` is the
 * bot's `bot_s` plus the person's share, which includes the `bridge_s` wait for the person.
 */
export type SimulatedPlan =
  | { outcome: 'answer'; ring_s: number; talk_s: number; bot_s?: number; transferred?: boolean; bridge_s?: number }
  | { outcome: 'busy' | 'failed'; ring_s: number }
  /** Answered, and no bot or person took the call within 2 s: the agent ends it as abandoned. */
  | { outcome: 'abandoned'; ring_s: number }
  | { outcome: 'no_answer' };

export class SimulatedTrunk implements Trunk {
  readonly #seed: number;
  readonly #scale: number;
  readonly #outcome: SimulatedOutcome;
  readonly #talkSeconds: number | undefined;
  readonly #recordDir: string | undefined;
  readonly #calls = new Map<string, Live>();

  constructor(opts: SimulatedTrunkOptions) {
    this.#seed = opts.seed;
    this.#scale = opts.timeScale ?? 1;
    this.#outcome = opts.outcome ?? 'random';
    this.#talkSeconds = opts.talkSeconds;
    this.#recordDir = opts.recordDir;
  }

  async start(): Promise<void> {}

  /** The call's schedule (exposed so tests can predict it). */
  plan(call: TrunkCall): SimulatedPlan {
    const rnd = mulberry32(this.#seed ^ hash(call.call_id));
    const draw = rnd();
    const outcome: Exclude<SimulatedOutcome, 'random'> =
      this.#outcome !== 'random'
        ? this.#outcome
        : (TEST_NUMBERS[call.to.slice(-4)] ?? (draw < 0.6 ? 'answer' : draw < 0.8 ? 'no_answer' : draw < 0.95 ? 'busy' : 'failed'));
    const ring = 2 + rnd() * 18; // 2–20 s of ringing
    if (outcome === 'no_answer') return { outcome };
    if (outcome === 'busy' || outcome === 'failed') return { outcome, ring_s: Math.min(ring, 3) };
    if (outcome === 'abandoned') return { outcome, ring_s: Math.min(ring, call.ring_timeout_s * 0.9) };
    const ring_s = Math.min(ring, call.ring_timeout_s * 0.9);
    if (call.handler === 'agents') return { outcome, ring_s, talk_s: this.#talkSeconds ?? round(10 + rnd() * 170) };
    const bot = this.#talkSeconds ?? round(5 + rnd() * 55);
    const transferred = this.#talkSeconds === undefined && rnd() < 0.3;
    const person = transferred ? round(20 + rnd() * 160) : 0;
    // Drawn last, so the draws above (and every plan without a transfer) stay as they were.
    const bridge = transferred ? { bridge_s: round(1 + rnd() * 2) } : {};
    return { outcome, ring_s, talk_s: bot + person, bot_s: bot, transferred, ...bridge };
  }

  originate(call: TrunkCall, onEvent: (event: TrunkEvent) => void): void {
    if (this.#calls.has(call.call_id)) return;
    const live: Live = { timers: new Set(), answeredAt: null, transfer: 'none', bot: null, done: false, emit: onEvent };
    this.#calls.set(call.call_id, live);
    const at = (simSeconds: number, fn: () => void) => {
      // An event handler may have hung the call up already.
      if (live.done) return;
      const t = setTimeout(() => {
        live.timers.delete(t);
        if (!live.done) fn();
      }, simSeconds * 1000 * this.#scale);
      live.timers.add(t);
    };
    const end = (e: Ended) => this.#end(call.call_id, live, e);
    onEvent({ type: 'placed', sip_status: 100 });
    const plan = this.plan(call);
    // The far end rings (180) a second after the INVITE, or halfway to its answer or rejection if
    // that comes sooner; a call that fails (503) never rings. Fixed, not drawn: the plans stay.
    if (plan.outcome !== 'failed') {
      const first = plan.outcome === 'no_answer' ? call.ring_timeout_s : plan.ring_s;
      at(Math.min(RING_AFTER_S, first / 2), () => {
        if (live.answeredAt === null) onEvent({ type: 'ringing', sip_status: 180 });
      });
    }
    switch (plan.outcome) {
      case 'no_answer':
        // Our ring timeout: CANCEL, and the far end answers 487.
        return at(call.ring_timeout_s, () => end({ type: 'ended', sip_status: 487, talk_seconds: 0, reason: 'no_answer' }));
      case 'busy':
        return at(plan.ring_s, () => end({ type: 'ended', sip_status: 486, talk_seconds: 0, reason: 'busy' }));
      case 'failed':
        return at(plan.ring_s, () => end({ type: 'ended', sip_status: 503, talk_seconds: 0, reason: 'failed' }));
      case 'abandoned':
        return at(plan.ring_s, () => {
          live.answeredAt = Date.now();
          onEvent({ type: 'answered', sip_status: 200 });
          at(2, () => end({ type: 'ended', sip_status: 200, talk_seconds: 2, reason: 'abandoned' }));
        });
      case 'answer':
        return at(plan.ring_s, () => {
          live.answeredAt = Date.now();
          live.botSeconds = plan.bot_s;
          onEvent({ type: 'answered', sip_status: 200 });
          if (plan.bot_s !== undefined) {
            // Its own generator: the plan's draws (and so every test that predicts a plan) stay as they were.
            live.bot = { startedAt: Date.now(), rnd: mulberry32((this.#seed ^ hash(call.call_id) ^ BOT_SALT) >>> 0), facts: botFacts(call, (this.#seed ^ hash(call.call_id) ^ FACT_SALT) >>> 0) };
            onEvent({ type: 'bot', event: 'started' });
          }
          const complete = () =>
            end({ type: 'ended', sip_status: 200, talk_seconds: plan.talk_s, reason: 'completed', ...(plan.bot_s !== undefined ? { bot_seconds: plan.bot_s, transferred: plan.transferred } : {}) });
          const { bot_s: bot, bridge_s: bridge } = plan;
          if (bot === undefined || bridge === undefined) return at(plan.talk_s, complete);
          // Each step of the hand-over is timed from the one before, so their order holds however
          // late the timers fire.
          at(bot, () => {
            this.#endBot(live, false);
            live.transfer = 'requested';
            onEvent({ type: 'transfer', stage: 'requested' });
            at(bridge, () => {
              live.transfer = 'bridged';
              onEvent({ type: 'transfer', stage: 'bridged' });
              at(plan.talk_s - bot - bridge, complete);
            });
          });
        });
    }
  }

  hangup(callId: string): void {
    const live = this.#calls.get(callId);
    if (!live || live.done) return;
    if (live.answeredAt === null) return this.#end(callId, live, { type: 'ended', sip_status: 487, talk_seconds: 0, reason: 'canceled' });
    const talk = round((Date.now() - live.answeredAt) / 1000 / this.#scale);
    // A hand-over counts once the person is on: a hang-up while the call waits for the bridge
    // leaves it untransferred.
    const bot = live.botSeconds !== undefined ? { bot_seconds: Math.min(talk, live.botSeconds), transferred: live.transfer === 'bridged' } : {};
    this.#end(callId, live, { type: 'ended', sip_status: 200, talk_seconds: talk, reason: 'hangup', ...bot });
  }

  /**
   * Ends a call once: stops its timers, completes a bridged transfer, then reports `ended` (after
   * writing its recording, for an answered call when recording).
   */
  #end(callId: string, live: Live, e: Ended): void {
    live.done = true;
    for (const t of live.timers) clearTimeout(t);
    this.#calls.delete(callId);
    this.#endBot(live, e.reason !== 'completed');
    if (live.transfer === 'bridged') live.emit({ type: 'transfer', stage: 'completed' });
    if (!this.#recordDir || live.answeredAt === null || e.talk_seconds <= 0) return live.emit(e);
    const path = join(this.#recordDir, `${callId.replace(/[^A-Za-z0-9_-]/g, '_')}.wav`);
    writeToneWav(path, e.talk_seconds).then(
      (bytes) => live.emit({ ...e, recording: { path, format: 'wav', bytes, written_at: new Date().toISOString() } satisfies RecordedFile }),
      // A recording that could not be written: the call still ends (reconciliation shows the gap).
      () => live.emit(e),
    );
  }

  /**
   * Ends the bot session, if one runs: `ended` (or, for one session in 50, `failed`) with a reply
   * time for every 6 simulated seconds the bot talked, each 250–1250 ms, drawn from the session's
   * own generator.
   */
  #endBot(live: Live, hungUp: boolean): void {
    const bot = live.bot;
    if (!bot) return;
    live.bot = null;
    const failed = bot.rnd() < 0.02;
    // The plan's bot time when the session ends on schedule (timers early or late change nothing),
    // the time it ran when the call was hung up before.
    const planned = live.botSeconds ?? 0;
    const seconds = hungUp ? Math.min((Date.now() - bot.startedAt) / 1000 / this.#scale, planned) : planned;
    const replies = Math.min(MAX_REPLY_TIMES, Math.max(1, Math.round(seconds / 6)));
    const reply_ms = Array.from({ length: replies }, () => Math.round(250 + bot.rnd() * 1000));
    // What the bot learned, told before its session's end (a broken session learned nothing).
    if (!failed) for (const f of bot.facts) live.emit({ type: 'fact', key: f.key, value: f.value });
    live.emit({ type: 'bot', event: failed ? 'failed' : 'ended', reply_ms });
  }

  async close(): Promise<void> {
    for (const id of [...this.#calls.keys()]) this.hangup(id);
  }
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
