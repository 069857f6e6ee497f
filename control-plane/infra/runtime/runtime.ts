/**
 * The durable actor runtime. Each actor (a company, a campaign, a media node) has exactly one
 * owner instance at a time, through a coordinator lease (TTL 10 s, renewed every 3 s). Claiming an
 * actor raises its epoch in the store; every snapshot write carries the owner's epoch and is
 * refused when a newer owner has raised it since, so a stalled former owner cannot overwrite a
 * newer snapshot. An owner that cannot renew in time stops its actors (AbortSignal).
 *
 * An event reaches the owner from any instance: a local call, or request and reply over the
 * coordinator (`actor-mail.ts`). When an owner dies, another instance claims the actor (on the
 * next event for it, or by the adoption sweep) and restores it from its last snapshot. Deadlines
 * live in context as absolute times and are re-armed on every restore. The `actors` rows and their
 * fenced writes are `actor-rows.ts`; an owned actor and its small operations `owned.ts`; when the
 * outbox consumers are woken, `OutboxWake` in `outbox.ts`.
 */
import { randomUUID } from 'node:crypto';
import { createActor, type AnyActorRef } from 'xstate';
import type { Logger } from '../../../shared/logger.ts';
import type { Coordinator } from '../coordination/coordinator.ts';
import type { Store, Tx } from '../db/store.ts';
import type { ActorDefinition, ActorEvent, ActorReply } from './definition.ts';
import { ActorMail, AnswerMemo, type InboxMessage, type ReplyMessage } from './actor-mail.ts';
import { claimRow, insertActor } from './actor-rows.ts';
import { OutboxWake } from './outbox.ts';
import { commitTransitions, type TransitionDeps } from './transitions.ts';
import { onQueued } from './work-notices.ts';
import { armDeadline, leaseName, LOST, type Owned } from './owned.ts';
import { ignore } from '../../../shared/errors.ts';

export type RuntimeOptions = {
  leaseTtlMs?: number;
  renewEveryMs?: number;
  adoptEveryMs?: number;
  /** How long one forwarded request waits for the owner before asking again. */
  forwardWaitMs?: number;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class ActorRuntime {
  readonly #store: Store;
  readonly #coordinator: Coordinator;
  readonly #log: Logger;
  readonly #me: string;
  readonly #defs = new Map<string, ActorDefinition>();
  readonly #owned = new Map<string, Owned>();
  readonly #claiming = new Map<string, Promise<boolean | 'missing'>>();
  readonly #mail: ActorMail;
  readonly #handled = new AnswerMemo<ActorReply | typeof LOST>((r) => r === LOST);
  readonly #wake: OutboxWake;
  readonly #transitions: TransitionDeps;
  readonly #ttl: number;
  readonly #renewEvery: number;
  readonly #adoptEvery: number;
  #timers: NodeJS.Timeout[] = [];
  #unlisten: (() => void) | null = null;
  #stopped = false;

  constructor(deps: { store: Store; coordinator: Coordinator; log: Logger; instanceId: string }, defs: ActorDefinition[], opts: RuntimeOptions = {}) {
    this.#store = deps.store;
    this.#coordinator = deps.coordinator;
    this.#log = deps.log.child({ part: 'actors' });
    this.#me = deps.instanceId;
    for (const d of defs) this.#defs.set(d.kind, d);
    this.#ttl = opts.leaseTtlMs ?? 10_000;
    this.#renewEvery = opts.renewEveryMs ?? 3_000;
    this.#adoptEvery = opts.adoptEveryMs ?? 2_000;
    // Short: a re-sent request keeps its id, so a slow owner answers it once, and a dead owner is
    // noticed (and its actor claimed) within a second of its lease running out.
    this.#wake = new OutboxWake(deps.coordinator);
    this.#mail = new ActorMail(deps.coordinator, deps.instanceId, opts.forwardWaitMs ?? 1_000);
    this.#transitions = { store: deps.store, log: this.#log, drop: (o, why) => this.#drop(o, why) };
  }

  /** Listens for forwarded events and replies, and starts the renewal and adoption loops. */
  async start(): Promise<void> {
    // Every commit that wrote outbox events on this store (`emit`, here or anywhere in this
    // instance) wakes the consumers through this runtime's OutboxWake: inside one of its batches,
    // once, when the batch is done.
    this.#unlisten = onQueued(this.#store, 'outbox', (consumers) => this.#wake.written(consumers));
    this.#mail.start((msg) => this.#onRequest(msg));
    this.#timers.push(setInterval(() => void this.#renewAll(), this.#renewEvery));
    this.#timers.push(setInterval(() => void this.adopt(), this.#adoptEvery));
    void this.adopt();
  }

  /** Gives up every actor (releasing leases so another instance takes over at once). */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers) clearInterval(t);
    this.#unlisten?.();
    await this.#mail.stop();
    await Promise.allSettled([...this.#owned.values()].map((o) => o.queue));
    await Promise.allSettled([...this.#owned.values()].map((o) => this.#drop(o, 'stopping')));
  }

  /** How many actors this instance owns now. */
  ownedCount(kind?: string): number {
    let n = 0;
    for (const o of this.#owned.values()) if (!kind || o.def.kind === kind) n++;
    return n;
  }

  /**
   * The actors of `kind` this instance owns now, with their current snapshots and the signal
   * that aborts when ownership is lost (for loops that work on owned actors, like the dialer).
   */
  owned(kind: string): Array<{ id: string; snapshot: ReturnType<AnyActorRef['getSnapshot']>; epoch: number; signal: AbortSignal }> {
    const out = [];
    for (const o of this.#owned.values()) {
      if (o.def.kind === kind && !o.abort.signal.aborted) out.push({ id: o.id, snapshot: o.actor.getSnapshot(), epoch: o.epoch, signal: o.abort.signal });
    }
    return out;
  }

  /** The actor's state value when this instance owns it now, else null. */
  stateOf(kind: string, id: string): string | null {
    const o = this.#owned.get(`${kind}:${id}`);
    if (!o || o.abort.signal.aborted) return null;
    return String(o.actor.getSnapshot().value);
  }

  /** Whether this instance owns the actor now. */
  owns(kind: string, id: string): boolean {
    const o = this.#owned.get(`${kind}:${id}`);
    return !!o && !o.abort.signal.aborted;
  }

  /** Writes a new actor's first snapshot inside `tx` (the transaction that creates its rows). */
  async create(tx: Parameters<ActorDefinition['onTransition']>[0]['tx'], kind: string, id: string, input: unknown): Promise<void> {
    const def = this.#def(kind);
    const actor = createActor(def.machine, { input });
    actor.start();
    const snapshot = actor.getPersistedSnapshot();
    actor.stop();
    await insertActor(tx as Tx, kind, id, def.version, snapshot);
  }

  /**
   * Delivers `event` to the actor wherever its owner runs and waits for the answer: `sendMany`
   * for one actor. Claims the actor when nobody owns it; retries while an owner dies and its
   * lease runs out. A claim that fails (the store cannot be reached) rejects at once with its
   * error: one request waits for nothing that cannot come (its caller answers 503 with
   * Retry-After), where a batch goes on with its other actors.
   */
  async send(kind: string, id: string, event: ActorEvent, timeoutMs = 20_000): Promise<ActorReply> {
    return (await this.sendMany(kind, [id], event, timeoutMs, 'reject')).get(id)!;
  }

  /**
   * Delivers the same `event` to many actors of one kind and waits for every answer. Actors this
   * instance owns take it together: each actor's queue is waited for, then all their transitions
   * are written in one transaction (snapshots fenced by their epochs, rows locked in id order).
   * Actors owned elsewhere get it the same way on their owner, one request per owner; unowned
   * ones are claimed first. Retries while owners die (and, unless `claimFailed` is 'reject',
   * while a claim fails); answers per id.
   */
  async sendMany(kind: string, ids: string[], event: ActorEvent, timeoutMs = 20_000, claimFailed: 'retry' | 'reject' = 'retry'): Promise<Map<string, ActorReply>> {
    this.#def(kind);
    const req = randomUUID();
    const until = Date.now() + timeoutMs;
    const answers = new Map<string, ActorReply>();
    let todo = [...new Set(ids)];
    while (todo.length && Date.now() < until && !this.#stopped) {
      const answered = answers.size;
      const local: Owned[] = [];
      const elsewhere: string[] = [];
      for (const id of todo) {
        const o = this.#owned.get(`${kind}:${id}`);
        if (o) local.push(o);
        else elsewhere.push(id);
      }
      const later: string[] = [];
      const byHolder = new Map<string, string[]>();
      const unowned: string[] = [];
      const holders = await Promise.all(elsewhere.map((id) => this.#coordinator.leaseHolder(leaseName(kind, id)).catch(ignore('the holder unread counts as no holder: the actor is claimed here or asked again'))));
      // Nothing moves: the coordinator did not answer (wait 200 ms), a claim here is under way (20 ms), else 50 ms.
      let wait = 50;
      elsewhere.forEach((id, i) => {
        const h = holders[i];
        if (h === null) unowned.push(id);
        else if (h === undefined || h.holder === this.#me) {
          later.push(id);
          wait = h === undefined ? 200 : Math.min(wait, 20);
        } else byHolder.set(h.holder, [...(byHolder.get(h.holder) ?? []), id]);
      });
      let claimed = 0;
      let claimError: unknown = null;
      const claims = Promise.all(
        unowned.map(async (id) => {
          const c = await this.#claim(kind, id).catch((err: unknown) => {
            if (claimFailed === 'reject') claimError ??= err;
            return false;
          });
          if (c === 'missing') answers.set(id, { ok: false, code: 'not_found', message: `no ${kind} ${id}` });
          else {
            if (c) claimed++;
            later.push(id);
          }
        }),
      );
      const forwarded = [...byHolder].map(async ([holder, list]) => {
        // One request id per owner (replies are matched by it); the same one again if re-sent, so
        // the owner answers what it already applied from before.
        const replies = (await this.#mail.request(holder, { req: `${req}@${holder}`, kind, ids: list, event }))?.replies;
        for (const id of list) {
          const r = replies?.[id];
          if (r) answers.set(id, r);
          else later.push(id);
        }
      });
      const applied = this.#applyMany(local, req, event).then(async (m) => {
        for (const [id, r] of m) {
          const got = await r;
          if (got === LOST) later.push(id);
          else answers.set(id, got);
        }
      });
      await Promise.all([claims, applied, ...forwarded]);
      if (claimError !== null) throw claimError;
      todo = later;
      // Nothing moved this round (the coordinator away, an owner dying, a claim lost): wait a little.
      if (todo.length && answers.size === answered && claimed === 0) await sleep(wait);
    }
    for (const id of todo) answers.set(id, { ok: false, code: 'unavailable', message: `the owner of ${kind} ${id} did not answer in time; try again` });
    return answers;
  }

  /** Claims every actor of a known kind that nobody owns (run every few seconds). */
  async adopt(): Promise<number> {
    if (this.#stopped) return 0;
    let rows: Array<{ kind: string; id: string }>;
    try {
      const kinds = [...this.#defs.values()].filter((d) => d.adopt !== false).map((d) => d.kind);
      if (kinds.length === 0) return 0;
      rows = await this.#store.db.selectFrom('actors').select(['kind', 'id']).where('kind', 'in', kinds).execute();
    } catch {
      return 0;
    }
    const todo = rows.filter((r) => !this.#owned.has(`${r.kind}:${r.id}`));
    let claimed = 0;
    for (let i = 0; i < todo.length; i += 100) {
      const results = await Promise.all(todo.slice(i, i + 100).map((r) => this.#claim(r.kind, r.id).catch(() => false)));
      claimed += results.filter((x) => x === true).length;
    }
    return claimed;
  }

  #def(kind: string): ActorDefinition {
    const def = this.#defs.get(kind);
    if (!def) throw new Error(`unknown actor kind ${kind}`);
    return def;
  }

  #claim(kind: string, id: string): Promise<boolean | 'missing'> {
    const key = `${kind}:${id}`;
    let p = this.#claiming.get(key);
    if (!p) {
      p = this.#doClaim(kind, id).finally(() => this.#claiming.delete(key));
      this.#claiming.set(key, p);
    }
    return p;
  }

  async #doClaim(kind: string, id: string): Promise<boolean | 'missing'> {
    if (this.#stopped || this.#owned.has(`${kind}:${id}`)) return this.#owned.has(`${kind}:${id}`);
    const def = this.#def(kind);
    const lease = await this.#coordinator.acquireLease(leaseName(kind, id), this.#me, this.#ttl);
    if (!lease) return false;
    const row = await claimRow(this.#store.db, kind, id, this.#me).catch(async (err) => {
      await this.#coordinator.releaseLease(lease).catch(ignore('a lease not released lapses at its ttl'));
      throw err;
    });
    if (!row) {
      await this.#coordinator.releaseLease(lease).catch(ignore('a lease not released lapses at its ttl'));
      return 'missing';
    }
    if (row.machine_version !== def.version) {
      await this.#coordinator.releaseLease(lease).catch(ignore('a lease not released lapses at its ttl'));
      throw new Error(`${kind} ${id}: snapshot of machine version ${row.machine_version}, this build runs ${def.version}`);
    }
    const snapshot = typeof row.snapshot === 'string' ? JSON.parse(row.snapshot) : row.snapshot;
    const actor = createActor(def.machine, { snapshot });
    actor.start();
    const o: Owned = { def, id, lease, epoch: Number(row.epoch), actor, queue: Promise.resolve(), abort: new AbortController(), lastRenew: Date.now(), timer: null };
    this.#owned.set(`${kind}:${id}`, o);
    this.#log.debug({ kind, id, epoch: o.epoch }, 'actor claimed');
    // An effect interrupted by the former owner's death runs again; deadlines are re-armed.
    o.queue = o.queue.then(() => this.#settle(o)).catch((err) => this.#log.error({ err, kind, id }, 'effects after restore failed'));
    return true;
  }

  /**
   * Applies `event` to these owned actors together: reserves each one's queue, waits until all
   * are idle, then runs `#applyBatch`. A re-sent request (same `req`) is answered from before.
   */
  #applyMany(list: Owned[], req: string, event: ActorEvent): Promise<Map<string, Promise<ActorReply | typeof LOST>>> {
    const out = new Map<string, Promise<ActorReply | typeof LOST>>();
    const fresh: Owned[] = [];
    for (const o of list) {
      const seen = this.#handled.get(`${req}|${o.def.kind}:${o.id}`);
      if (seen) out.set(o.id, seen);
      else fresh.push(o);
    }
    if (fresh.length === 0) return Promise.resolve(out);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ready = fresh.map((o) => {
      const idle = o.queue.then(
        () => {},
        () => {},
      );
      o.queue = idle.then(() => gate);
      return idle;
    });
    const batch = Promise.all(ready)
      .then(() => this.#applyBatch(fresh, event))
      .catch((err) => {
        this.#log.error({ err, kind: fresh[0].def.kind }, 'actor batch failed');
        const failed: ActorReply = { ok: false, code: 'unavailable', message: `the ${fresh[0].def.kind} could not be saved; try again` };
        return new Map<string, ActorReply | typeof LOST>(fresh.map((o) => [o.id, failed]));
      })
      .finally(release);
    for (const o of fresh) {
      const reply = batch.then((m) => m.get(o.id) ?? LOST);
      this.#handled.remember(`${req}|${o.def.kind}:${o.id}`, reply);
      out.set(o.id, reply);
    }
    return Promise.resolve(out);
  }

  /**
   * Applies `event` to these owned actors (their queues held by the caller: one actor, or many of
   * a kind) through the one transition path (`commitTransitions`), then runs each one's effects;
   * all of it one outbox wake-up batch (`OutboxWake`).
   */
  #applyBatch(list: Owned[], event: ActorEvent): Promise<Map<string, ActorReply | typeof LOST>> {
    return this.#wake.batch(async () => {
      const steps = await commitTransitions(this.#transitions, list, event);
      const out = new Map<string, ActorReply | typeof LOST>();
      await Promise.all(
        [...steps].map(async ([o, step]) => {
          if (step !== 'taken') return void out.set(o.id, step === LOST ? LOST : { ok: false, ...step.refused });
          try {
            if ((await this.#settle(o)) === LOST) return void out.set(o.id, LOST);
          } catch (err) {
            this.#log.error({ err, kind: o.def.kind, id: o.id }, 'actor effects failed');
            return void out.set(o.id, { ok: false, code: 'unavailable', message: `the ${o.def.kind} could not be saved; try again` });
          }
          const now = o.actor.getSnapshot();
          out.set(o.id, { ok: true, state: String(now.value), context: now.context, result: o.def.reply(now) });
        }),
      );
      return out;
    });
  }

  /** Runs effects until they have nothing more to say, then arms the next deadline. */
  async #settle(o: Owned): Promise<void | typeof LOST> {
    for (let round = 0; round < 10; round++) {
      if (o.abort.signal.aborted) return LOST;
      const events = await o.def.effects(o.id, o.actor.getSnapshot(), o.abort.signal);
      if (events.length === 0) break;
      for (const e of events) if ((await commitTransitions(this.#transitions, [o], e)).get(o) === LOST) return LOST;
    }
    armDeadline(o, (at) => void this.send(o.def.kind, o.id, { type: 'TICK', at }).catch(ignore('a tick not delivered: the deadline is armed again when the actor is next loaded')));
  }

  async #drop(o: Owned, why: string): Promise<void> {
    const key = `${o.def.kind}:${o.id}`;
    if (this.#owned.get(key) !== o) return;
    this.#owned.delete(key);
    o.abort.abort(new Error(why));
    if (o.timer) clearTimeout(o.timer);
    o.actor.stop();
    this.#log.debug({ kind: o.def.kind, id: o.id, why }, 'actor given up');
    await this.#coordinator.releaseLease(o.lease).catch(ignore('a lease not released lapses at its ttl'));
  }

  async #renewAll(): Promise<void> {
    const all = [...this.#owned.values()];
    for (let i = 0; i < all.length; i += 200) {
      await Promise.all(
        all.slice(i, i + 200).map(async (o) => {
          try {
            if (await this.#coordinator.renewLease(o.lease, this.#ttl)) o.lastRenew = Date.now();
            else await this.#drop(o, 'lease lost');
          } catch {
            // Cannot reach the coordinator: keep the actor only while the lease surely still holds.
            if (Date.now() - o.lastRenew > this.#ttl - this.#renewEvery) await this.#drop(o, 'lease could not be renewed');
          }
        }),
      );
    }
  }

  /**
   * A request from another instance for actors this one owns; null for those it does not hold
   * (any more). A request for one actor (`id`, from a build before `send` was `sendMany`) is
   * answered the same way.
   */
  async #onRequest(msg: InboxMessage): Promise<ReplyMessage> {
    const ids = 'ids' in msg ? msg.ids : [msg.id];
    const mine: Owned[] = [];
    for (const id of ids) {
      const o = this.#owned.get(`${msg.kind}:${id}`);
      if (o) mine.push(o);
    }
    const replies: Record<string, ActorReply | null> = {};
    const m = await this.#applyMany(mine, msg.req, msg.event);
    for (const id of ids) {
      const r = await (m.get(id) ?? LOST);
      replies[id] = r === LOST ? null : r;
    }
    return 'ids' in msg ? { req: msg.req, replies } : { req: msg.req, reply: replies[msg.id] };
  }
}
