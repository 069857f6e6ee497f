/**
 * The outbox: every domain event (the spec's `vd.*` names) is written in the same transaction as
 * the change that caused it, with a unique id and the envelope fields. Each registered consumer
 * gets its own queue row per event and claims rows with `FOR UPDATE SKIP LOCKED`, so any number
 * of workers on any number of instances share the work and no event is handled twice; a
 * consumer's effect and the removal of its queue row commit together.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { sql } from 'kysely';
import { newIds } from '../../../shared/ids.ts';
import type { Logger } from '../../../shared/logger.ts';
import type { Coordinator } from '../coordination/coordinator.ts';
import { lastingSubscribe, type LastingSubscription } from '../coordination/lasting-subscription.ts';
import { PREPARED, type Store, type Tx } from '../db/store.ts';
import type { EventName } from '../../../shared/events.ts';
import { CHANNELS } from '../coordination/channels.ts';
import { webhookTexts } from '../../../shared/webhook-data.ts';
import { joinNamed, queuedIn, type Named } from './work-notices.ts';
import { WakeLoop } from './wake-loop.ts';
import { ignore } from '../../../shared/errors.ts';

/** The wire envelope of an event (the spec's webhook message envelope). */
export type EventEnvelope = {
  id: string;
  tenant_id: string | null;
  at: string;
  source: string;
  subject: string;
  data: Record<string, unknown>;
};

export type NewEvent = {
  /** One of the platform's events (`shared/events.ts`); no other name can be emitted. */
  subject: EventName;
  tenant_id: string | null;
  data: Record<string, unknown>;
  source?: string;
  /** The id of what the event is about (company, campaign, call). */
  about?: string | null;
  campaign_id?: string | null;
};

/** Every consumer of the outbox; each event is queued once for each that wants it. */
export const OUTBOX_CONSUMERS: string[] = ['audit', 'webhooks', 'meter'];

/**
 * Which events a consumer wants queued (default: all). The audit log only records events that
 * name who acted, so call events (most of the volume) are never queued for it.
 */
const CONSUMER_WANTS: Record<string, (e: NewEvent) => boolean> = {
  audit: (e) => typeof e.data.actor === 'object' && e.data.actor !== null,
  webhooks: (e) => (e.tenant_id !== null && !OPERATORS_ONLY_EVENTS.has(e.subject)) || PLATFORM_WIDE_EVENTS.has(e.subject),
  // The usage meter's monthly totals (control-plane/usage/ledger.ts).
  meter: (e) => e.subject === 'vd.usage.recorded',
};

/**
 * Events without a company that every company's webhook connections may subscribe to. Other
 * company-less events (media nodes, companies created) are the operators' business only.
 */
export const PLATFORM_WIDE_EVENTS: ReadonlySet<string> = new Set(['vd.platform.dialing_pause_changed', 'vd.platform.dialing_rules_changed']);

/**
 * Events about a company that are the operators' business only (their notes on it, its prices and
 * invoice records): in the audit trails, never sent to the company's own webhook connections.
 */
export const OPERATORS_ONLY_EVENTS: ReadonlySet<string> = new Set([
  'vd.platform.company_changed',
  'vd.platform.price_changed',
  'vd.platform.billing_month_invoiced',
  'vd.platform.billing_month_paid',
  'vd.platform.billing_month_reopened',
]);

/** Channel on which a commit that wrote events wakes the workers of every instance. */
export const OUTBOX_CHANNEL = CHANNELS.outboxWritten;

/**
 * When the outbox consumers are woken after a commit that wrote events. Inside `batch(fn)` they
 * are woken once, when `fn` is done, not at each commit on the way: the actor runtime runs an
 * event and its effects in one batch, so a suspension's transition, the pause of its campaigns
 * that its chain sends and the chain's outcome are one notice, sent when the chain has run, and
 * the consumers do not take the store and this process's time from the chain while its answer
 * waits. The events are durable at each commit; only the wake-up waits. A batch started inside
 * another joins it; work that outlives a batch (a timer armed in it) wakes them itself.
 */
export class OutboxWake {
  readonly #coordinator: Coordinator;
  /** `named`: what the batch's commits named (`joinNamed`), undefined while none wrote events. */
  readonly #scope = new AsyncLocalStorage<{ done: boolean; named: Named | undefined }>();

  constructor(coordinator: Coordinator) {
    this.#coordinator = coordinator;
  }

  async batch<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#scope.getStore()?.done === false) return fn();
    const scope: { done: boolean; named: Named | undefined } = { done: false, named: undefined };
    try {
      return await this.#scope.run(scope, fn);
    } finally {
      scope.done = true;
      if (scope.named !== undefined) this.#wake(scope.named ?? new Set());
    }
  }

  /**
   * Outbox events were committed (for `consumers`; none named: any may have some): the consumers
   * are woken now, or when the batch under way is done.
   */
  written(consumers: ReadonlySet<string> = new Set()): void {
    const scope = this.#scope.getStore();
    // One unnamed commit makes the batch's notice unnamed (every consumer looks).
    if (scope && !scope.done) scope.named = joinNamed(scope.named, consumers);
    else this.#wake(consumers);
  }

  #wake(consumers: ReadonlySet<string>): void {
    this.#coordinator.publish(OUTBOX_CHANNEL, noticeOf(consumers)).catch(ignore('a lost wake-up notice: the consumers poll as well'));
  }
}

/**
 * A commit notice: the consumers whose queues got events, comma-separated; `1` (or anything not
 * naming only known consumers) means any may have some, and the worker asks the store.
 */
export function noticeOf(consumers: ReadonlySet<string>): string {
  return consumers.size > 0 ? [...consumers].join(',') : '1';
}

/** The consumers a notice names, or null when it names none (the worker looks at every queue). */
function namedIn(notice: string): string[] | null {
  if (notice === '1' || notice === '') return null;
  const names = notice.split(',');
  return names.every((n) => /^[a-z_]+$/.test(n)) ? names : null;
}

/**
 * Writes events inside `tx`; returns their envelopes. One statement for the events and their
 * consumers' queue rows, its values passed as arrays (a batch of 10,000 events is still 11
 * parameters): at the call event writer's rates this is most of its time in the store, and a
 * VALUES list of that size costs more to parse and plan than to write. Once `tx` has committed
 * (a `Store.transaction`), the consumers of every instance are woken (`work-notices.ts`: the
 * runtime's `OutboxWake`), so their poll is only a fallback.
 */
export async function emit(tx: Tx, events: NewEvent[]): Promise<EventEnvelope[]> {
  if (events.length === 0) return [];
  const at = new Date();
  const ids = newIds('evt', events.length);
  const queued: string[] = [];
  const consumers: string[] = [];
  const texts = events.map((e) => JSON.stringify(e.data));
  // A NUL character in the data (`\u0000` in its text): the json column takes it, but reading any
  // field of that text fails (`->`, `->>`, a cast to jsonb), so every claim of the consumers that
  // read it (webhooks, audit, meter) would fail at it, the events queued after it waiting behind
  // it. Refused here, as the jsonb column refused it before migration 0027.
  for (const t of texts) {
    if (t.includes('\\u0000') && NUL_ESCAPE.test(t)) throw Object.assign(new Error('event data may not hold a NUL character (\\u0000)'), { code: '22P05' });
  }
  // For an event queued for webhooks, the texts its messages are put together from (webhook-data.ts).
  const hook: Array<boolean | null> = new Array(events.length).fill(null);
  const shown: Array<string | null> = new Array(events.length).fill(null);
  const masked: Array<string | null> = new Array(events.length).fill(null);
  events.forEach((e, i) => {
    for (const consumer of OUTBOX_CONSUMERS) {
      if (!(CONSUMER_WANTS[consumer]?.(e) ?? true)) continue;
      queued.push(ids[i]);
      consumers.push(consumer);
      if (consumer === 'webhooks') {
        const t = webhookTexts(e.data, texts[i]);
        hook[i] = true;
        shown[i] = t.shown;
        masked[i] = t.masked;
      }
    }
  });
  // Whether an event's company has webhook connections is looked up (`outbox_webhooks_listening`,
  // once per company of the statement) after the lock that orders event writes against new
  // connections (`webhooks/fan-out-lock.ts`) is held, with a snapshot taken after it: one statement, not a statement for the
  // lock and one for the events.
  const got = await sql<{ consumer: string }>`${PREPARED('outbox_emit')}
    with written as (
      insert into outbox (id, tenant_id, at, source, subject, about, campaign_id, data, hook, hook_shown, hook_masked)
      select x.id, x.tenant_id, ${at}::timestamptz, x.source, x.subject, x.about, x.campaign_id, x.data::json, x.hook, x.hook_shown, x.hook_masked
      from unnest(${ids}::text[], ${events.map((e) => e.tenant_id)}::text[], ${events.map((e) => e.source ?? 'control-plane')}::text[],
        ${events.map((e) => e.subject)}::text[], ${events.map((e) => e.about ?? null)}::text[], ${events.map((e) => e.campaign_id ?? null)}::text[],
        ${jsonTexts(texts)}, ${hook}::boolean[], ${jsonTexts(shown)}, ${jsonTexts(masked)}) as x(id, tenant_id, source, subject, about, campaign_id, data, hook, hook_shown, hook_masked)
      returning seq, id, tenant_id, hook
    ),
    listening as (
      select t.tenant_id from (select distinct w.tenant_id from written w where w.hook) t where outbox_webhooks_listening(t.tenant_id)),
    queued as (
      insert into outbox_pending (consumer, seq, event_id)
      select q.consumer, w.seq, w.id from written w join unnest(${queued}::text[], ${consumers}::text[]) as q(event_id, consumer) on q.event_id = w.id
      where q.consumer <> 'webhooks' or exists (select 1 from listening l where l.tenant_id is not distinct from w.tenant_id)
      returning consumer)
    select distinct consumer from queued`.execute(tx);
  // The notice after the commit names the consumers whose queues got events: their workers take
  // them without first asking the store which queues hold any.
  if (got.rows.length > 0) queuedIn(tx, 'outbox', got.rows.map((r) => r.consumer));
  return events.map((e, i) => ({ id: ids[i], tenant_id: e.tenant_id, at: at.toISOString(), source: e.source ?? 'control-plane', subject: e.subject, data: e.data }));
}

/** The escape `\u0000` in a JSON text (not an escaped backslash followed by a plain "u0000"). */
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/;

/**
 * A list of JSON texts as a text[] for a statement, passed as one JSON array: node-postgres
 * escapes an array parameter element by element in JavaScript (every quote of every text), which
 * cost more than the rest of the event's preparation; JSON.stringify escapes natively.
 */
function jsonTexts(texts: Array<string | null>) {
  return sql`array(select t from json_array_elements_text(${JSON.stringify(texts)}::json) with ordinality as a(t, i) order by i)`;
}

/** An event handed to a consumer: the envelope, its queue position and the campaign it is about. */
export type ConsumedEvent = EventEnvelope & { seq: string; campaign_id: string | null };

/**
 * A consumer may say how many events it can take now (`room`, default a whole batch): at 0 its
 * events stay queued, where any instance with room may take them, and the worker drains it again
 * when the consumer calls the function it was given through `onRoom`.
 */
type ConsumerRoom = {
  room?: () => number;
  onRoom?: (wake: () => void) => void;
};

/**
 * Handles a batch inside the claiming transaction (`consumeBatch`); may return work to run once
 * that transaction has committed (e.g. sending what it wrote).
 */
export type ConsumerHandler = ((tx: Tx, events: ConsumedEvent[]) => Promise<void | (() => void)>) & ConsumerRoom;

/**
 * A consumer that takes up to `limit` of its queued events itself, in a statement of its own, and
 * says how many it took (the webhooks consumer: one round trip a batch instead of five).
 */
export type SelfConsumer = { consume: (limit: number) => Promise<number> } & ConsumerRoom;

/** A consumer the worker runs: a handler of claimed batches, or one that takes its events itself. */
export type Consumer = ConsumerHandler | SelfConsumer;

/**
 * Claims up to `limit` queued events of `consumer` (skipping rows other workers hold), hands them
 * to `handler` in seq order and removes them, all in one transaction. Returns how many it took.
 */
export async function consumeBatch(store: Store, consumer: string, limit: number, handler: ConsumerHandler): Promise<number> {
  let afterCommit: void | (() => void) = undefined;
  const n = await store.transaction(async (tx) => {
    afterCommit = undefined;
    // Claimed and removed from the queue in one statement: the removal commits with the handler's
    // effect or not at all, and the batch costs one round trip fewer.
    // The rows come as the handler takes them: the time as the envelope's ISO text (written from
    // a JS Date, so to the millisecond: the same text as its toISOString), the position as text.
    const { rows: claimed } = await sql<ConsumedEvent>`${PREPARED('outbox_claim')}
      with taken as (
        delete from outbox_pending p
        where p.consumer = ${consumer} and p.seq in (
          select q.seq from outbox_pending q where q.consumer = ${consumer} order by q.seq limit ${limit} for update skip locked)
        returning p.seq)
      select o.seq::text as seq, o.id, o.tenant_id, to_char(o.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at,
        o.source, o.subject, o.data, o.campaign_id
      from taken t join outbox o on o.seq = t.seq
      order by o.seq`.execute(tx);
    if (claimed.length === 0) return 0;
    afterCommit = await handler(tx, claimed);
    return claimed.length;
  });
  (afterCommit as void | (() => void))?.();
  return n;
}

/**
 * The consumers with queued events, in one statement: a wake-up opens a claiming transaction only
 * for them. Most events are queued for some consumers only (call events are not audited), and an
 * empty claim still costs three round trips (begin, claim, commit).
 *
 * Each consumer's newest queued row, read backwards from the end of its range of the primary key
 * (an index-only scan that stops at the first live entry). Claims take the oldest rows, so the
 * entries of just-claimed (deleted, not yet vacuumed) rows lie at the start of the range: an
 * `exists` walked them all, from the start, before it reached a row still queued (204 µs a
 * look-up on average in a 46,500-delivery run), or the planner scanned the whole table.
 */
async function consumersWithWork(store: Store, names: string[]): Promise<Set<string>> {
  const { rows } = await sql<{ consumer: string }>`${PREPARED('outbox_waiting')}
    select c.consumer from unnest(${names}::text[]) as c(consumer)
    where (select max(p.seq) from outbox_pending p where p.consumer = c.consumer) is not null`.execute(store.db);
  return new Set(rows.map((r) => r.consumer));
}

/**
 * How often an idle worker looks at the queues anyway. Every commit that wrote events wakes the
 * workers of every instance (`emit`), so this only finds events whose notice was lost (the
 * coordinator was away) or that a dead instance's claim gave back: they wait at most 5 s.
 */
export const OUTBOX_FALLBACK_POLL_MS = 5_000;

/** How many events a consumer claims at a time. */
const DRAIN_BATCH = 200;

/**
 * Runs consumers: woken by commit notices and, as a fallback, every `pollMs` (a `WakeLoop`).
 * Consumers that drain their queues themselves (`elsewhere`: the usage meter) are woken by the
 * same look-up when it finds events queued for them, so they neither poll nor listen on their own.
 */
export class OutboxWorker {
  readonly #store: Store;
  readonly #coordinator: Coordinator;
  readonly #log: Logger;
  readonly #consumers: Map<string, Consumer>;
  readonly #elsewhere: Map<string, () => void>;
  readonly #names: string[];
  readonly #pollMs: number;
  readonly #loop: WakeLoop;
  #sub: LastingSubscription | null = null;
  /**
   * What the wake-ups since the last drain named (`joinNamed`): the consumers commit notices
   * named, or null once any wake-up named none (a poll, room freed, an unnamed notice), when the
   * drain asks the store which queues hold events; undefined while no wake-up is pending.
   */
  #pending: Named | undefined = undefined;
  /**
   * When the store was last asked which queues hold events: a drain asks it again once `pollMs`
   * has passed, even when every wake-up since named its consumers (a notice lost while others
   * keep coming does not leave its consumer's events waiting).
   */
  #lastLook = performance.now();

  constructor(
    store: Store,
    coordinator: Coordinator,
    log: Logger,
    consumers: Map<string, Consumer>,
    opts: { pollMs?: number; elsewhere?: Map<string, () => void> } = {},
  ) {
    this.#store = store;
    this.#coordinator = coordinator;
    this.#log = log;
    this.#consumers = consumers;
    this.#elsewhere = opts.elsewhere ?? new Map();
    this.#names = [...consumers.keys(), ...this.#elsewhere.keys()];
    this.#pollMs = opts.pollMs ?? OUTBOX_FALLBACK_POLL_MS;
    // A poll's round finds `#pending` undefined: it asks the store.
    this.#loop = new WakeLoop(() => this.#drain(), this.#pollMs);
    for (const handler of consumers.values()) handler.onRoom?.(() => this.wake());
  }

  async start(): Promise<void> {
    this.#sub = lastingSubscribe(this.#coordinator, OUTBOX_CHANNEL, (notice) => this.wake(namedIn(notice)));
    this.#loop.start();
  }

  /**
   * Drains the queues now (or once more after the drain under way): those of `consumers` when
   * every wake-up since the last drain was a notice naming them, else every consumer's that holds
   * events (the store is asked).
   */
  wake(consumers: string[] | null = null): void {
    if (this.#loop.stopped) return;
    this.#pending = joinNamed(this.#pending, consumers);
    this.#loop.wake();
  }

  async #drain(): Promise<void> {
    const look = performance.now() - this.#lastLook >= this.#pollMs;
    const named = look ? null : (this.#pending ?? null);
    this.#pending = undefined;
    let waiting: Set<string>;
    try {
      if (named === null) this.#lastLook = performance.now();
      waiting = named ?? (await consumersWithWork(this.#store, this.#names));
    } catch (err) {
      if (!this.#loop.stopped) this.#log.error({ err }, 'outbox look-up failed; will retry');
      return;
    }
    for (const [name, wake] of this.#elsewhere) if (waiting.has(name)) wake();
    for (const [name, handler] of this.#consumers) {
      if (!waiting.has(name)) continue;
      try {
        // A batch short of the limit took all there was: one more claim would only find nothing
        // (events committed since then woke the worker again, and the loop drains once more). A
        // consumer without room leaves its events queued until it wakes the worker (`onRoom`).
        for (;;) {
          const limit = Math.min(DRAIN_BATCH, handler.room?.() ?? DRAIN_BATCH);
          if (this.#loop.stopped || limit <= 0 || (await ('consume' in handler ? handler.consume(limit) : consumeBatch(this.#store, name, limit, handler))) < limit) break;
        }
      } catch (err) {
        if (!this.#loop.stopped) this.#log.error({ err, consumer: name }, 'outbox consumer failed; will retry');
      }
    }
  }

  async stop(): Promise<void> {
    const drained = this.#loop.stop();
    await this.#sub?.stop();
    await drained;
  }
}
