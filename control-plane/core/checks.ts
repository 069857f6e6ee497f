/**
 * The list check: before anyone calls a person, their number is checked with libphonenumber's
 * full metadata (a valid number of its region; its line type is kept on the person) and against
 * the company's do-not-call list, and their zones and legal region are resolved
 * (`compliance/callee-zones.ts`; the person points at its `callee_zones` row). People arrive
 * `unchecked` from every path; a check makes each `callable` or `rejected` (`invalid_number`,
 * `dnc`, `unknown_timezone`). The dialer calls only callable people, within their zones' hours,
 * and still re-reads the do-not-call list at launch (a number added after the check).
 *
 * A check is a `list_checks` row: queued in the transaction that added people (joined by the
 * batches that follow while it waits) or on demand (a re-check of everyone), then run in the
 * background by whichever instance leases it, in chunks, each chunk one transaction that also
 * moves its progress; a check whose instance died is taken over when its lease runs out and goes
 * on after the last chunk done. Its end writes one `list_verify` usage item, keyed by the check,
 * in the same transaction as its `done`: a completion processed twice counts once.
 */
import { sql } from 'kysely';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { ignore, NotFound } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import type { Logger } from '../../shared/logger.ts';
import { checkNumber, type NumberCheck } from '../../shared/phone.ts';
import { resolveCalleeZones, type CalleeZones } from '../compliance/callee-zones.ts';
import { CalleeZoneIds } from '../compliance/callee-zone-ids.ts';
import type { ListCheckStatus } from '../infra/db/schema/index.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import type { Coordinator } from '../infra/coordination/coordinator.ts';
import { CHANNELS } from '../infra/coordination/channels.ts';
import { announceQueued, WakeLoop } from '../infra/runtime/wake-loop.ts';
import { queuedIn } from '../infra/runtime/work-notices.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { meterUsage, listVerify } from '../usage/meter.ts';
import { findList } from './lists.ts';

/** A check as the API shows it. */
export type CheckView = {
  id: string;
  list_id: string;
  status: ListCheckStatus;
  checked: number;
  callable: number;
  rejected: number;
  started_at: string | null;
  finished_at: string | null;
};

/**
 * Queues a check of the list's unchecked people in the caller's transaction (the one that added
 * them), or joins the list's check that is queued and not started yet; answers its id. Once the
 * transaction has committed, the check is announced to every instance's `ListChecks`.
 */
export async function queueListCheck(tx: Tx, tenantId: string, listId: string): Promise<string> {
  const waiting = await tx
    .selectFrom('list_checks')
    .select('id')
    .where('list_id', '=', listId)
    .where('scope', '=', 'unchecked')
    .where('status', '=', 'queued')
    .orderBy('created_at')
    .limit(1)
    // Held until this transaction ends, so no runner starts it (and finishes without the people
    // this transaction adds) before they are committed; a runner that took it first makes it
    // 'running', and then a new check is queued.
    .forUpdate()
    .executeTakeFirst();
  if (waiting) return waiting.id;
  const id = newId('chk');
  await tx.insertInto('list_checks').values({ id, tenant_id: tenantId, list_id: listId, scope: 'unchecked' }).execute();
  queuedIn(tx, 'list_checks');
  return id;
}

/** Times a check is taken before it is given up as 'failed'. */
export const MAX_CHECK_ATTEMPTS = 5;

/**
 * How often an idle instance looks for checks, when checks are announced (a coordinator): only
 * for a lost notice or a dead instance's check whose lease ran out, so such a check starts at
 * most 10 s late (after its 30 s lease). Without a coordinator: every second.
 */
export const CHECKS_FALLBACK_POLL_MS = 10_000;

export type ListChecksOptions = {
  /** How often an idle instance looks for checks queued elsewhere or left by a dead instance. */
  pollMs?: number;
  /** How long a running check is held without progress before another instance may take it. */
  leaseMs?: number;
  /** People per chunk (one transaction each). */
  chunk?: number;
  /**
   * Bench only (bench/list-check.bench.ts's baseline): false checks as before issue 25, with no
   * zones resolved and none required. Never set in production.
   */
  resolveZones?: boolean;
};

/** Runs the list checks on this instance, one at a time. */
export class ListChecks {
  readonly #store: Store;
  readonly #log: Logger;
  readonly #instanceId: string;
  readonly #leaseMs: number;
  readonly #chunk: number;
  readonly #loop: WakeLoop;
  readonly #coordinator: Coordinator | undefined;
  readonly #zoneIds: CalleeZoneIds;
  readonly #resolveZones: boolean;
  #notices: { stop(): Promise<void> } | null = null;

  /** With `coordinator`, checks queued on any instance wake this one (`announceQueued`). */
  constructor(deps: { store: Store; log: Logger; instanceId: string; coordinator?: Coordinator }, opts: ListChecksOptions = {}) {
    this.#store = deps.store;
    this.#log = deps.log;
    this.#instanceId = deps.instanceId;
    this.#coordinator = deps.coordinator;
    this.#loop = new WakeLoop(() => this.#drain(), opts.pollMs ?? (deps.coordinator ? CHECKS_FALLBACK_POLL_MS : 1000));
    this.#leaseMs = opts.leaseMs ?? 30_000;
    this.#chunk = opts.chunk ?? 2000;
    this.#zoneIds = new CalleeZoneIds(deps.store.db);
    this.#resolveZones = opts.resolveZones ?? true;
  }

  start(): void {
    if (this.#coordinator) this.#notices = announceQueued({ store: this.#store, coordinator: this.#coordinator, instanceId: this.#instanceId }, 'list_checks', CHANNELS.listChecksQueued, this.#loop);
    this.#loop.start();
  }

  async stop(): Promise<void> {
    await this.#notices?.stop();
    this.#notices = null;
    await this.#loop.stop();
  }

  /** Looks for checks to run now (after a batch of people was committed on this instance). */
  wake(): void {
    this.#loop.wake();
  }

  /** Runs checks until none is left to take. */
  async #drain(): Promise<void> {
    while (!this.#loop.stopped) {
      let id: string | null;
      try {
        id = await this.#take();
      } catch (err) {
        this.#log.warn({ err }, 'list checks: could not look for work');
        return;
      }
      if (!id) return;
      try {
        await this.run(id);
      } catch (err) {
        this.#log.error({ err, check_id: id }, 'list check failed; it is taken up again when its lease ends');
        await sql`update list_checks set error = ${String((err as Error)?.message ?? err).slice(0, 500)} where id = ${id}`.execute(this.#store.db).catch(ignore('noting the failure on the check is best effort; the failure is logged above and the check is taken up again'));
        return;
      }
    }
  }

  /**
   * Leases the oldest open check whose list has no older open check (a list's checks run one
   * after another), if nobody holds it. One statement (a round trip is most of an idle look's
   * cost): a check taken MAX_CHECK_ATTEMPTS times without ending (it failed each time, or its
   * runners died) is given up as 'failed' in it, and so no longer holds up the checks of its list
   * behind it (the pick, which sees the table as it was before the statement, leaves it out).
   */
  async #take(): Promise<string | null> {
    const r = await sql<{ id: string }>`
      with given as (
        update list_checks c set status = 'failed', finished_at = now(), lease_owner = null, lease_until = null,
          error = coalesce(error, ${`given up after ${MAX_CHECK_ATTEMPTS} attempts`})
        where c.status in ('queued', 'running') and c.attempts >= ${MAX_CHECK_ATTEMPTS} and (c.lease_until is null or c.lease_until < now())
        returning c.id
      ), taken as (
        update list_checks c set status = 'running', lease_owner = ${this.#instanceId}, attempts = c.attempts + 1,
          lease_until = now() + ${`${this.#leaseMs} milliseconds`}::interval, started_at = coalesce(c.started_at, now()),
          -- What it covers is fixed when it first starts: the people there now (every batch that
          -- joined it has committed: it held the check's row). Later batches have their own check.
          upto = case when c.started_at is null
            then (select max(p.id) from people p where p.list_id = c.list_id and (c.scope = 'all' or p."check" = 'unchecked'))
            else c.upto end
        from (
          select o.id from list_checks o
          where o.status in ('queued', 'running') and (o.lease_until is null or o.lease_until < now()) and o.attempts < ${MAX_CHECK_ATTEMPTS}
            and not exists (select 1 from list_checks e where e.list_id = o.list_id and e.status in ('queued', 'running') and (e.created_at, e.id) < (o.created_at, o.id)
              and not (e.attempts >= ${MAX_CHECK_ATTEMPTS} and (e.lease_until is null or e.lease_until < now())))
          order by o.created_at, o.id
          limit 1
          for update skip locked
        ) pick
        where c.id = pick.id
        returning c.id
      )
      select id from taken`.execute(this.#store.db);
    return r.rows[0]?.id ?? null;
  }

  /** Runs the leased check `id` to its end, chunk by chunk. Exposed for tests. */
  async run(id: string): Promise<void> {
    for (;;) {
      if (this.#loop.stopped) return;
      const step = await this.#chunkOf(id);
      // Lost: another instance took the check over (this one stalled past its lease); it ends it.
      if (step === 'lost') return;
      if (step === 'done') break;
      await yieldToLoop();
    }
    await this.finish(id, this.#instanceId);
  }

  /** Checks the next chunk of the check's people: 'more' to come, 'done' (none left), or 'lost' (no longer this instance's). */
  async #chunkOf(id: string): Promise<'more' | 'done' | 'lost'> {
    const check = await this.#store.db.selectFrom('list_checks').select(['tenant_id', 'list_id', 'scope', 'upto', 'done_upto', 'lease_owner', 'status']).where('id', '=', id).executeTakeFirst();
    if (!check || check.status !== 'running' || check.lease_owner !== this.#instanceId) return 'lost';
    if (check.upto === null) return 'done';
    const people = await this.#store.transaction(async (tx) => {
      await byIndex(tx);
      let q = tx.selectFrom('people').select(['id', 'phone_number', 'timezone', 'postal_code', 'state']).where('list_id', '=', check.list_id).where('id', '<=', check.upto).orderBy('id').limit(this.#chunk);
      if (check.scope === 'unchecked') q = q.where('check', '=', 'unchecked');
      if (check.done_upto) q = q.where('id', '>', check.done_upto);
      return q.execute();
    });
    if (people.length === 0) return 'done';
    // The numbers and zones, in slices so one chunk does not hold the event loop for long.
    const found: NumberCheck[] = [];
    const zones: Array<CalleeZones | null> = [];
    for (let i = 0; i < people.length; i += 250) {
      for (const p of people.slice(i, i + 250)) {
        const number = checkNumber(p.phone_number);
        found.push(number);
        zones.push(number.valid && this.#resolveZones ? resolveCalleeZones({ ...p, country: number.country }) : null);
      }
      if (i + 250 < people.length) await yieldToLoop();
    }
    await this.#zoneIds.ensure(zones.filter((z) => z !== null));
    const zoneIds = zones.map((z) => (z ? this.#zoneIds.idOf(z) : null));
    const last = people[people.length - 1].id;
    const lease = `${this.#leaseMs} milliseconds`;
    return this.#store.transaction(async (tx) => {
      // Still ours (a takeover after a long pause would have moved the lease): then write.
      const held = await sql<{ id: string }>`
        update list_checks set lease_until = now() + ${lease}::interval
        where id = ${id} and status = 'running' and lease_owner = ${this.#instanceId} returning id`.execute(tx);
      if (held.rows.length === 0) return 'lost' as const;
      // Driven by the chunk's ids (a join on the primary key), the do-not-call look-up one probe
      // of its primary key per number (a lateral `limit 1`: never a scan of the company's whole
      // list, which a stale estimate made the planner hash once per chunk). `offset 0` keeps the
      // inner select whole, so each person's reason is worked out once.
      await byIndex(tx);
      const r = await sql<{ callable: boolean }>`
        update people p set "check" = case when x.reason is null then 'callable' else 'rejected' end,
          check_reason = x.reason, line_type = x.line_type, zone_id = x.zone_id
        from (
          select u.id, u.line_type, u.zone_id,
            case when not u.valid then 'invalid_number' when d.listed then 'dnc'
              when u.zone_id is null and ${this.#resolveZones} then 'unknown_timezone' end as reason
          from unnest(${people.map((p) => p.id)}::text[], ${found.map((f) => f.valid)}::boolean[], ${found.map((f) => f.lineType)}::text[],
            ${people.map((p) => p.phone_number)}::text[], ${zoneIds}::int[]) as u(id, valid, line_type, phone, zone_id)
          left join lateral (select true as listed from dnc_numbers d where d.tenant_id = ${check.tenant_id} and d.number = u.phone limit 1) d on true
          offset 0
        ) x
        where p.id = x.id
        returning x.reason is null as callable`.execute(tx);
      const callable = r.rows.filter((x) => x.callable).length;
      const rejected = r.rows.length - callable;
      await sql`
        update list_checks set checked = checked + ${callable + rejected}, callable = callable + ${callable}, rejected = rejected + ${rejected}, done_upto = ${last}
        where id = ${id}`.execute(tx);
      return 'more' as const;
    });
  }

  /**
   * Ends the check `id`: `done`, and its `list_verify` item (numbers checked) through the usage
   * meter in the same transaction. Ending it again changes nothing and counts nothing. With
   * `holder`, only while that instance still holds the check (a runner that lost it must not end
   * it half-way).
   */
  async finish(id: string, holder?: string): Promise<void> {
    await this.#store.transaction(async (tx) => {
      const row = await tx.selectFrom('list_checks').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
      if (!row) return;
      if (holder !== undefined && (row.status !== 'running' || row.lease_owner !== holder)) return;
      if (row.status !== 'done') {
        await tx.updateTable('list_checks').set({ status: 'done', finished_at: new Date(), lease_owner: null, lease_until: null }).where('id', '=', id).execute();
      }
      if (row.checked > 0) {
        const at = row.status === 'done' && row.finished_at ? row.finished_at : new Date();
        await emit(tx, await meterUsage(tx, [listVerify({ id: row.id, tenant_id: row.tenant_id }, row.checked, at)]));
      }
    });
  }

  /** `POST /lists/{id}/check`: a re-check of every person of the company's list. */
  async recheck(tenantId: string, listId: string): Promise<CheckView> {
    await findList(this.#store, tenantId, listId);
    // A re-check asked again before the first one started is the same re-check (and billed once).
    const id = await this.#store.transaction(async (tx) => {
      await sql`select pg_advisory_xact_lock(hashtext(${`recheck:${listId}`}))`.execute(tx);
      const waiting = await tx.selectFrom('list_checks').select('id').where('list_id', '=', listId).where('scope', '=', 'all').where('status', '=', 'queued').executeTakeFirst();
      if (waiting) return waiting.id;
      const id = newId('chk');
      await tx.insertInto('list_checks').values({ id, tenant_id: tenantId, list_id: listId, scope: 'all' }).execute();
      queuedIn(tx, 'list_checks');
      return id;
    });
    this.wake();
    return this.find(tenantId, listId, id);
  }

  /** The company's check `checkId` of list `listId`; 404 otherwise. */
  async find(tenantId: string, listId: string, checkId: string): Promise<CheckView> {
    const row = await this.#store.db.selectFrom('list_checks').selectAll().where('id', '=', checkId).where('tenant_id', '=', tenantId).where('list_id', '=', listId).executeTakeFirst();
    if (!row) throw new NotFound(`no check ${checkId} of list ${listId}`);
    return {
      id: row.id,
      list_id: row.list_id,
      status: row.status,
      checked: row.checked,
      callable: row.callable,
      rejected: row.rejected,
      started_at: row.started_at?.toISOString() ?? null,
      finished_at: row.finished_at?.toISOString() ?? null,
    };
  }
}

/**
 * Pins the rest of the transaction's plans to index paths. A chunk's statements have one right
 * plan whatever the table's size (2,000 people found by primary key, their numbers probed one by
 * one), but right after a large import the statistics still describe the table before it, and the
 * planner then chose to scan all of people (and hash the company's whole do-not-call list) once
 * per chunk: 200,000 people checked in 7.7 s instead of 2.5 s, 48 s with a 1,000,000-number
 * do-not-call list. `set local` ends with the transaction.
 */
async function byIndex(tx: Tx): Promise<void> {
  await sql`select set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true), set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`.execute(tx);
}
