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
import { createActor, type AnyActorRef, type AnyStateMachine } from 'xstate';
import type { Logger } from '../../../shared/logger.ts';
import type { Coordinator } from '../coordination/coordinator.ts';
import type { Store, Tx } from '../db/store.ts';
import type { ActorDefinition, ActorEvent, ActorReply, BatchItem } from './definition.ts';
import { ActorMail, AnswerMemo, type InboxMessage, type ReplyMessage } from './actor-mail.ts';
import { claimRow, insertActor, writeSnapshot, writeSnapshots } from './actor-rows.ts';
import { emit, OutboxWake, type NewEvent } from './outbox.ts';
import { onQueued } from './work-notices.ts';
import { armDeadline, leaseName, LOST, prepares, restoreMachine, type Owned } from './owned.ts';
import { ignore } from '../../../shared/errors.ts';

export type RuntimeOptions = {
  leaseTtlMs?: number;
  renewEveryMs?: number;
  adoptEveryMs?: number;
  /** How long one forwarded request waits for the owner before asking again. */
  forwardWaitMs?: number;
};

type Refusal = { refused: { code: 'unprocessable' | 'conflict'; message: string } };

/** A batch write found an actor fenced: the transaction is rolled back and the batch re-run without it. */
const FENCED = Symbol('fenced');
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
   * Delivers `event` to the actor wherever its owner runs and waits for the answer. Claims the
   * actor when nobody owns it; retries while an owner dies and its lease runs out.
   */
  async send(kind: string, id: string, event: ActorEvent, timeoutMs = 20_000): Promise<ActorReply> {
    this.#def(kind);
    const key = `${kind}:${id}`;
    const req = randomUUID();
    const until = Date.now() + timeoutMs;
    while (Date.now() < until && !this.#stopped) {
      const local = this.#owned.get(key);
      if (local) {
        const r = await this.#enqueue(local, req, event);
        if (r !== LOST) return r;
        continue;
      }
      const holder = await this.#coordinator.leaseHolder(leaseName(kind, id)).catch(ignore('the holder unread counts as no holder: the actor is claimed here or asked again'));
      if (holder === undefined) {
        await sleep(200);
        continue;
      }
      if (!holder) {
        const claimed = await this.#claim(kind, id);
        if (claimed === 'missing') return { ok: false, code: 'not_found', message: `no ${kind} ${id}` };
        if (!claimed) await sleep(50);
        continue;
      }
      if (holder.holder === this.#me) {
        await sleep(20);
        continue;
      }
      const r = (await this.#mail.request(holder.holder, { req, kind, id, event }))?.reply;
      if (r) return r;
    }
    return { ok: false, code: 'unavailable', message: `the owner of ${kind} ${id} did not answer in time; try again` };
  }

  /**
   * Delivers the same `event` to many actors of one kind and waits for every answer. Actors this
   * instance owns take it together: each actor's queue is waited for, then all their transitions
   * are written in one transaction (snapshots fenced by their epochs, rows locked in id order).
   * Actors owned elsewhere get it the same way on their owner, one request per owner; unowned
   * ones are claimed first. Retries like `send` while owners die; answers per id.
   */
  async sendMany(kind: string, ids: string[], event: ActorEvent, timeoutMs = 20_000): Promise<Map<string, ActorReply>> {
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
      elsewhere.forEach((id, i) => {
        const h = holders[i];
        if (h === null) unowned.push(id);
        else if (h === undefined || h.holder === this.#me) later.push(id);
        else byHolder.set(h.holder, [...(byHolder.get(h.holder) ?? []), id]);
      });
      let claimed = 0;
      const claims = Promise.all(
        unowned.map(async (id) => {
          const c = await this.#claim(kind, id).catch(() => false);
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
      todo = later;
      // Nothing moved this round (the coordinator away, an owner dying, a claim lost): wait a little.
      if (todo.length && answers.size === answered && claimed === 0) await sleep(50);
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

  #enqueue(o: Owned, req: string, event: ActorEvent): Promise<ActorReply | typeof LOST> {
    const seen = this.#handled.get(req);
    if (seen) return seen;
    const reply = o.queue.then(() => this.#apply(o, event));
    o.queue = reply.catch(ignore('the reply is returned to its caller with its failure; the queue only orders the next event'));
    this.#handled.remember(req, reply);
    return reply;
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
   * One transaction for many actors' transitions (their queues are held by the caller). The
   * machines take the event and the statements' parameters are built before the transaction
   * begins, so none is open while Node computes; only an event the kind completes with `prepare`
   * (which reads the store) is taken inside it, actor by actor. Then one statement locks the
   * snapshot rows in id order, checks each against its owner's epoch and writes the new snapshots,
   * then come the kind's rows (`onTransitions`) and outbox events. A fenced actor (a newer owner
   * raised its epoch) rolls it all back: the other machines are put back to the snapshots they
   * had, the fenced ones given up, and the rest written without them. Effects and deadlines follow
   * the commit.
   */
  async #applyBatch(list: Owned[], event: ActorEvent): Promise<Map<string, ActorReply | typeof LOST>> {
    const out = new Map<string, ActorReply | typeof LOST>();
    let todo = [...list].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (;;) {
      const cands: Array<{ o: Owned; prev: ReturnType<AnyActorRef['getSnapshot']> }> = [];
      for (const o of todo) {
        if (o.abort.signal.aborted) {
          out.set(o.id, LOST);
          continue;
        }
        const snap = o.actor.getSnapshot();
        if (!snap.can(event)) out.set(o.id, { ok: false, ...o.def.refusal(snap, event) });
        else cands.push({ o, prev: snap });
      }
      if (cands.length === 0) return out;
      const def = cands[0].o.def;
      const inTx = prepares(def, event);
      const events: NewEvent[] = [];
      const items: Array<BatchItem<AnyStateMachine> & { o: Owned }> = [];
      const take = (o: Owned, prev: ReturnType<AnyActorRef['getSnapshot']>, e: ActorEvent) => {
        o.actor.send(e);
        items.push({ o, id: o.id, prev, next: o.actor.getSnapshot(), event: e });
      };
      // The fenced write's rows, as one JSON document.
      let rows = '';
      const build = () => void (rows = JSON.stringify(items.map((i) => ({ id: i.id, epoch: i.o.epoch, snapshot: i.o.actor.getPersistedSnapshot() }))));
      // The event needs nothing read in the transaction: the machines take it now.
      if (!inTx) {
        for (const { o, prev } of cands) take(o, prev, event);
        build();
      }
      let fenced: Owned[] = [];
      try {
        await this.#store.transaction(async (tx) => {
          if (inTx) {
            for (const { o, prev } of cands) {
              const e = await def.prepare!({ tx, id: o.id, snapshot: prev, event });
              if (prev.can(e)) take(o, prev, e);
              else out.set(o.id, { ok: false, ...def.refusal(prev, e) });
            }
          }
          if (items.length === 0) return;
          // The fence and the write in one round trip (actor-rows.ts).
          if (inTx) build();
          const landed = await writeSnapshots(tx, def.kind, def.version, items.map((i) => i.id), rows);
          if (landed.size < items.length) {
            fenced = items.filter((i) => !landed.has(i.id)).map((i) => i.o);
            throw FENCED;
          }
          const push = (e: NewEvent[]) => events.push(...e);
          if (def.onTransitions) await def.onTransitions({ tx, items, emit: push });
          else for (const i of items) await def.onTransition({ tx, id: i.id, prev: i.prev, next: i.next, event: i.event, emit: push });
          await emit(tx, events);
        });
      } catch (err) {
        if (err === FENCED) {
          // Rolled back: the machines that took the event go back to where they were, the fenced
          // ones are given up, and the rest are written again without them.
          for (const i of items) if (!fenced.includes(i.o)) restoreMachine(i.o, i.prev);
          for (const o of fenced) {
            this.#log.warn({ kind: o.def.kind, id: o.id, epoch: o.epoch }, 'write fenced: a newer owner holds this actor');
            await this.#drop(o, 'fenced');
            out.set(o.id, LOST);
          }
          todo = cands.map((c) => c.o).filter((o) => !fenced.includes(o));
          continue;
        }
        // The in-memory states ran ahead of the stored ones: forget them; the next event restores them.
        for (const i of items) await this.#drop(i.o, 'store write failed');
        throw err;
      }
      await Promise.all(
        items.map(async ({ o }) => {
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
    }
  }

  /** Handles one event and its effects as one outbox wake-up batch (`OutboxWake`). */
  #apply(o: Owned, event: ActorEvent): Promise<ActorReply | typeof LOST> {
    return this.#wake.batch(() => this.#handle(o, event));
  }

  async #handle(o: Owned, event: ActorEvent): Promise<ActorReply | typeof LOST> {
    if (o.abort.signal.aborted) return LOST;
    const snap = o.actor.getSnapshot();
    if (!snap.can(event)) return { ok: false, ...o.def.refusal(snap, event) };
    try {
      const t = await this.#transition(o, event);
      if (t === LOST) return LOST;
      if (t) return { ok: false, ...t.refused };
      if ((await this.#settle(o)) === LOST) return LOST;
    } catch (err) {
      this.#log.error({ err, kind: o.def.kind, id: o.id }, 'actor transition failed');
      return { ok: false, code: 'unavailable', message: `the ${o.def.kind} could not be saved; try again` };
    }
    const now = o.actor.getSnapshot();
    return { ok: true, state: String(now.value), context: now.context, result: o.def.reply(now) };
  }

  /** Runs effects until they have nothing more to say, then arms the next deadline. */
  async #settle(o: Owned): Promise<void | typeof LOST> {
    for (let round = 0; round < 10; round++) {
      if (o.abort.signal.aborted) return LOST;
      const events = await o.def.effects(o.id, o.actor.getSnapshot(), o.abort.signal);
      if (events.length === 0) break;
      for (const e of events) if ((await this.#transition(o, e)) === LOST) return LOST;
    }
    armDeadline(o, (at) => void this.send(o.def.kind, o.id, { type: 'TICK', at }).catch(ignore('a tick not delivered: the deadline is armed again when the actor is next loaded')));
  }

  /**
   * Applies `event` and writes the new snapshot, the kind's rows and outbox events in one
   * transaction (or only the snapshot, in one statement, for an event of the kind's `snapshotOnly`).
   * With `prepare`, the event is first completed inside that transaction and refused (nothing
   * written, the actor untouched) when the machine cannot take it.
   */
  async #transition(o: Owned, event: ActorEvent): Promise<void | typeof LOST | Refusal> {
    const prev = o.actor.getSnapshot();
    const events: NewEvent[] = [];
    let sent = false;
    let written: boolean | Refusal;
    try {
      if (!prepares(o.def, event) && o.def.snapshotOnly?.(event)) {
        // Nothing but the snapshot to write: one statement, which commits on its own.
        sent = true;
        o.actor.send(event);
        written = await this.#writeSnapshot(this.#store.db, o);
      } else {
        written = await this.#store.transaction(async (tx) => {
          let e = event;
          if (prepares(o.def, event)) {
            e = await o.def.prepare!({ tx, id: o.id, snapshot: prev, event });
            if (!prev.can(e)) return { refused: o.def.refusal(prev, e) };
          }
          sent = true;
          o.actor.send(e);
          const next = o.actor.getSnapshot();
          if (!(await this.#writeSnapshot(tx, o))) return false;
          await o.def.onTransition({ tx, id: o.id, prev, next, event: e, emit: (x) => events.push(...x) });
          await emit(tx, events);
          return true;
        });
      }
    } catch (err) {
      // The in-memory state ran ahead of the stored one: forget it; the next event restores it.
      if (sent) await this.#drop(o, 'store write failed');
      throw err;
    }
    if (typeof written === 'object') return written;
    if (!written) {
      this.#log.warn({ kind: o.def.kind, id: o.id, epoch: o.epoch }, 'write fenced: a newer owner holds this actor');
      await this.#drop(o, 'fenced');
      return LOST;
    }
  }

  /** Writes the actor's current snapshot while its owner's epoch is still the stored one; false when fenced. */
  #writeSnapshot(db: Store['db'] | Tx, o: Owned): Promise<boolean> {
    return writeSnapshot(db, { kind: o.def.kind, id: o.id, epoch: o.epoch, version: o.def.version, snapshot: o.actor.getPersistedSnapshot() });
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

  /** A request from another instance for actors this one owns; null for those it does not hold (any more). */
  async #onRequest(msg: InboxMessage): Promise<ReplyMessage> {
    if ('ids' in msg) {
      const mine: Owned[] = [];
      for (const id of msg.ids) {
        const o = this.#owned.get(`${msg.kind}:${id}`);
        if (o) mine.push(o);
      }
      const replies: Record<string, ActorReply | null> = {};
      const m = await this.#applyMany(mine, msg.req, msg.event);
      for (const id of msg.ids) {
        const r = await (m.get(id) ?? LOST);
        replies[id] = r === LOST ? null : r;
      }
      return { req: msg.req, replies };
    }
    const o = this.#owned.get(`${msg.kind}:${msg.id}`);
    let reply: ActorReply | null = null;
    if (o) {
      const r: ActorReply | typeof LOST = await this.#enqueue(o, msg.req, msg.event).catch((): typeof LOST => LOST);
      reply = r === LOST ? null : r;
    }
    return { req: msg.req, reply };
  }
}
