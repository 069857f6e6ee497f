/**
 * The drachtio trunk (media-agent/drachtio-trunk.ts) with the real drachtio-srf client against the
 * drachtio-server stand-in, for the trunk's suites: `harness()` starts both, `place()` originates a
 * call and collects its events, `closeHarnesses()` stops what was started.
 */
import { DrachtioTrunk, type DrachtioTrunkOptions } from '../../media-agent/drachtio-trunk.ts';
import type { TrunkCall, TrunkEvent } from '../../media-agent/trunk.ts';
import { DrachtioStandin, type FarEnd, type StandinOptions } from './drachtio-standin.ts';
import { loadScale } from './eventually.ts';

export const SECRET = 'cymru';

/** Numbers the stand-in's far end reads: answer, ring, busy… */
export const FAR: Record<string, FarEnd> = {
  '+15550001': { kind: 'answer' },
  '+15550002': { kind: 'ring' },
  '+15550003': { kind: 'answer', afterMs: 400 },
  '+15550486': { kind: 'reject', status: 486 },
  '+15550487': { kind: 'reject', status: 486, afterMs: 400 },
  '+15550503': { kind: 'reject', status: 503 },
  '+15550603': { kind: 'reject', status: 603 },
  '+15550200': { kind: 'answer-on-cancel' },
};

export type Logged = { level: string; msg: string; fields?: Record<string, unknown> };
export type Harness = { standin: DrachtioStandin; trunk: DrachtioTrunk; logs: Logged[] };
const open: Harness[] = [];

export async function harness(opts: Partial<DrachtioTrunkOptions> = {}, standinOpts: Partial<StandinOptions> = {}): Promise<Harness> {
  const standin = await DrachtioStandin.start({ secret: SECRET, farEnd: (user) => FAR[user] ?? { kind: 'ring' }, ...standinOpts });
  const logs: Logged[] = [];
  const trunk = new DrachtioTrunk({
    host: '127.0.0.1',
    port: standin.port,
    secret: SECRET,
    trunkHost: 'carrier.example:5060',
    localSdp: 'v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=vd\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n',
    reconnectMaxDelayMs: 100,
    startWaitMs: 2_000,
    log: (level, msg, fields) => logs.push({ level, msg, ...(fields ? { fields } : {}) }),
    ...opts,
  });
  const h = { standin, trunk, logs };
  open.push(h);
  return h;
}

export async function closeHarnesses(): Promise<void> {
  for (const h of open.splice(0)) {
    await h.trunk.close();
    await h.standin.close();
  }
}

/**
 * Places a call and collects its events; `next(type)` waits for the first event of that type.
 * `events` leaves out the far end's ringing (180/183), which the stand-in sends for every call:
 * it is kept in `ringing` (with its place among the others in `all`).
 */
export function place(trunk: DrachtioTrunk, to: string, ring_timeout_s = 30, call_id = `call_${to}_${Math.random().toString(36).slice(2, 8)}`) {
  const events: TrunkEvent[] = [];
  const ringing: TrunkEvent[] = [];
  const all: TrunkEvent[] = [];
  const waiters: Array<() => void> = [];
  const call: TrunkCall = { call_id, to, from: '+15559999', ring_timeout_s, handler: 'agents' };
  trunk.originate(call, (e) => {
    all.push(e);
    (e.type === 'ringing' ? ringing : events).push(e);
    for (const w of waiters.splice(0)) w();
  });
  // Woken by the event itself, not by polling (`eventually`): scenarios act in the same turn as
  // the event (before the far end reads the next frame).
  const next = async <T extends TrunkEvent['type']>(type: T, timeoutMs = 10_000): Promise<Extract<TrunkEvent, { type: T }>> => {
    const deadline = Date.now() + timeoutMs * loadScale(); // a hang guard, stretched on a busy machine as `eventually`'s
    for (;;) {
      const hit = all.find((e) => e.type === type);
      if (hit) return hit as Extract<TrunkEvent, { type: T }>;
      if (Date.now() > deadline) throw new Error(`no ${type} for ${call_id} within ${timeoutMs} ms; got ${JSON.stringify(events)}`);
      await new Promise<void>((r) => {
        const tm = setTimeout(r, 50);
        waiters.push(() => {
          clearTimeout(tm);
          r();
        });
      });
    }
  };
  return { call_id, events, ringing, all, next };
}

