/**
 * People in a company's lists: adding them from a JSON array and reading them. Each person's
 * number is normalised to E.164 (no `+`: read as US, the legacy dialer's phone_code 1); a number
 * that repeats in the request, or is already in the list, is skipped and the list's row left as
 * it is. The lead fields follow the spec's lead import rules (`lead.ts`, which the CSV
 * import shares). People arrive as `new`: the do-not-call check happens before anyone calls them.
 * A person's own `timezone` (an IANA name, optional) must be one this runtime knows: one that is
 * not fails the whole request (422 naming it), since a wrong zone would put calls outside the
 * callee's hours.
 */
import { sql } from 'kysely';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { z } from 'zod';
import { ignore, Invalid, NotFound } from '../../shared/errors.ts';
import { newIds } from '../../shared/ids.ts';
import { LeadInput, leadText, normaliseLead, REJECTED_ROWS_LISTED, type Lead } from './lead.ts';
import { isKnownZone } from '../compliance/calling-window.ts';
import { readLegalRules } from '../compliance/legal-rules.ts';
import { NextCalls } from './next-call.ts';
import type { PersonCheck, PersonStatus } from '../infra/db/schema/index.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { findList } from './lists.ts';
import { queueListCheck } from './checks.ts';
import { checkCursor, PAGE_SIZE, pageOf } from '../infra/db/page.ts';
import { importRows } from '../metrics.ts';

/** Leads read between two writes of a batch. */
const LEAD_SLICE = 2000;

/** People one request may add. */
export const MAX_PEOPLE_PER_REQUEST = 10_000;
const knownZones = new Set<string>();

/**
 * Refuses the whole batch (422 naming the field, `body[3].timezone`) when an element's
 * `timezone` is given and is not an IANA zone this runtime knows.
 */
function checkTimezones(items: readonly unknown[], path: string): void {
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (typeof item !== 'object' || item === null || !('timezone' in item)) continue;
    const tz = (item as { timezone: unknown }).timezone;
    if (tz === null || tz === undefined || (typeof tz === 'string' && tz.trim() === '')) continue;
    const name = typeof tz === 'string' ? tz.trim() : null;
    if (name !== null && (knownZones.has(name) || isKnownZone(name))) {
      if (knownZones.size < 2000) knownZones.add(name);
      continue;
    }
    throw new Invalid(`${path}[${i}].timezone: expected an IANA time zone name such as America/Chicago, got ${JSON.stringify(tz)?.slice(0, 80)}`);
  }
}

export type AddPeopleResult = {
  received: number;
  added: number;
  skipped_duplicates: number;
  rejected: number;
  rejected_rows: Array<{ index: number; phone_number: string | null; reason: string }>;
  /** People added with a field left empty (a date of birth that is not a date). */
  warnings: number;
  /** The list check that will check the people added (they are `unchecked` until it has). */
  check_id: string;
};

/** What adding people needs: the store, and the list checks to wake once they are in. */
export type PeopleDeps = { store: Store; checks: { wake(): void } };

/** What the list's own import did with a batch of leads. */
export type LeadBatchResult = {
  received: number;
  /** New people in the list. */
  created: number;
  /** Numbers repeated inside the batch (after the first). */
  duplicates: number;
  /** Numbers already in the list, left as they were. */
  unchanged: number;
  rejected: number;
  rejected_rows: Array<{ index: number; phone_number: string | null; reason: string }>;
  /** Leads taken with a field left empty (a date of birth that is not a date). */
  warnings: number;
  check_id: string;
};

/**
 * The list's own import of a batch of leads (index 0 first; `read` turns an element into a lead
 * input or says why it cannot be one): each lead normalised by the lead import rules, repeated
 * numbers skipped, numbers already in the list left unchanged, the new people stored `unchecked`
 * and their check queued, all in one transaction. No valid lead: 422, nothing stored.
 */
export async function importLeadBatch(
  deps: PeopleDeps,
  tenantId: string,
  listId: string,
  items: readonly unknown[],
  read: (item: unknown) => { ok: true; input: LeadInput } | { ok: false; reason: string },
  what = 'person',
): Promise<LeadBatchResult> {
  const { store } = deps;
  if (items.length > MAX_PEOPLE_PER_REQUEST) {
    throw new Invalid(`at most ${MAX_PEOPLE_PER_REQUEST} ${what === 'lead' ? 'leads' : 'people'} a request (got ${items.length}); split them`);
  }
  if (items.length === 0) throw new Invalid(`no ${what} sent`);
  checkTimezones(items, what === 'lead' ? 'leads' : 'body');
  await findList(store, tenantId, listId);
  const byNumber = new Set<string>();
  const rejected_rows: LeadBatchResult['rejected_rows'] = [];
  let rejected = 0;
  let repeated = 0;
  let warnings = 0;
  const { created, check_id } = await store.transaction(async (tx, afterCommit) => {
    // Read in slices, each slice's new people sent to the store while the next is read: the
    // store writes while this process parses numbers.
    const inserts: Array<Promise<number>> = [];
    for (let from = 0; from < items.length; from += LEAD_SLICE) {
      const fresh: Lead[] = [];
      for (let index = from; index < Math.min(items.length, from + LEAD_SLICE); index++) {
        const item = items[index];
        const input = read(item);
        const result = input.ok ? normaliseLead(input.input) : input;
        if (!result.ok) {
          rejected++;
          if (rejected_rows.length < REJECTED_ROWS_LISTED) rejected_rows.push({ index, phone_number: rawPhone(item), reason: result.reason });
          continue;
        }
        if (result.warning) warnings++;
        if (byNumber.has(result.lead.phone_number)) repeated++;
        else {
          byNumber.add(result.lead.phone_number);
          fresh.push(result.lead);
        }
      }
      if (fresh.length) {
        // Each slice in number order: overlapping writers take the unique index's locks in one
        // order within a statement, which makes a deadlock between two batches unlikely.
        fresh.sort((x, y) => (x.phone_number < y.phone_number ? -1 : x.phone_number > y.phone_number ? 1 : 0));
        const written = insertLeads(tx, tenantId, listId, fresh);
        written.catch(ignore('awaited below, where a failure fails the transaction'));
        inserts.push(written);
      }
      await yieldToLoop();
    }
    if (byNumber.size === 0) {
      throw new Invalid(`no ${what} has a valid phone number (index ${rejected_rows[0].index}: ${rejected_rows[0].reason})`);
    }
    const created = (await Promise.all(inserts)).reduce((a, b) => a + b, 0);
    afterCommit(() => deps.checks.wake());
    return { created, check_id: await queueListCheck(tx, tenantId, listId) };
  });
  return { received: items.length, created, duplicates: repeated, unchanged: byNumber.size - created, rejected, rejected_rows, warnings, check_id };
}

/**
 * Inserts leads (numbers unique among them) into the list as new `unchecked` people, in one
 * statement whose values are arrays; a number already in the list is left as it is. Answers how
 * many were new.
 */
export async function insertLeads(tx: Tx, tenantId: string, listId: string, leads: readonly Lead[]): Promise<number> {
  if (leads.length === 0) return 0;
  const col = <K extends keyof Lead>(k: K) => leads.map((l) => l[k]);
  const r = await sql<{ n: number }>`
    with added as (
      insert into people (id, tenant_id, list_id, lead_id, phone_number, first_name, last_name, state, postal_code, email, date_of_birth, timezone)
      select x.id, ${tenantId}, ${listId}, x.lead_id, x.phone_number, x.first_name, x.last_name, x.state, x.postal_code, x.email, x.date_of_birth::date, x.timezone
      from unnest(${newIds('per', leads.length)}::text[], ${col('lead_id')}::text[], ${col('phone_number')}::text[], ${col('first_name')}::text[],
        ${col('last_name')}::text[], ${col('state')}::text[], ${col('postal_code')}::text[], ${col('email')}::text[], ${col('date_of_birth')}::text[],
        ${col('timezone')}::text[])
        as x(id, lead_id, phone_number, first_name, last_name, state, postal_code, email, date_of_birth, timezone)
      on conflict (list_id, phone_number) do nothing
      returning 1
    )
    select count(*)::int as n from added`.execute(tx);
  return r.rows[0].n;
}

/**
 * Adds `people` (a JSON array, index 0 first) to the company's list `listId`, all in one
 * transaction with the queueing of their check.
 */
export async function addPeople(deps: PeopleDeps, tenantId: string, listId: string, people: unknown[]): Promise<AddPeopleResult> {
  const r = await importLeadBatch(deps, tenantId, listId, people, (item) => {
    const parsed = LeadInput.safeParse(item);
    return parsed.success ? { ok: true, input: parsed.data } : { ok: false, reason: fieldProblem(parsed.error) };
  });
  return { received: r.received, added: r.created, skipped_duplicates: r.duplicates + r.unchanged, rejected: r.rejected, rejected_rows: r.rejected_rows, warnings: r.warnings, check_id: r.check_id };
}

function fieldProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue.path.length === 0) return 'not a person object';
  return `invalid ${issue.path.join('.')}`;
}

function rawPhone(item: unknown): string | null {
  if (typeof item !== 'object' || item === null) return null;
  const v = (item as Record<string, unknown>).phone_number;
  return typeof v === 'string' || typeof v === 'number' ? String(v).slice(0, 40) : null;
}

/** A person as the API shows it. */
export type PersonView = Lead & {
  id: string;
  list_id: string;
  status: PersonStatus;
  attempts: number;
  next_attempt_at: string | null;
  check: PersonCheck;
  check_reason: string | null;
  line_type: string | null;
  /** The IANA zones the check resolved for the person (sorted); null until checked. */
  timezone_used: string[] | null;
  /** When the person's legal calling window next opens (at or after their next attempt); null when nobody will call them. */
  next_call_at: string | null;
  created_at: string;
};

function personQuery(store: Store, tenantId: string) {
  return store.db
    .selectFrom('people as p')
    .leftJoin('callee_zones as z', 'z.id', 'p.zone_id')
    .select([
      'p.id', 'p.list_id', 'p.lead_id', 'p.phone_number', 'p.first_name', 'p.last_name', 'p.state', 'p.postal_code', 'p.email', 'p.status', 'p.attempts',
      'p.next_attempt_at', 'p.check', 'p.check_reason', 'p.line_type', 'p.created_at', 'p.timezone', 'p.closed_at', 'z.zones', 'z.region',
    ])
    .select(sql<string | null>`to_char(p.date_of_birth, 'YYYY-MM-DD')`.as('date_of_birth'))
    .where('p.tenant_id', '=', tenantId);
}

type PersonRow = Awaited<ReturnType<ReturnType<typeof personQuery>['executeTakeFirstOrThrow']>>;

function personView(r: PersonRow, next: NextCalls): PersonView {
  return {
    id: r.id,
    list_id: r.list_id,
    lead_id: r.lead_id,
    phone_number: r.phone_number,
    first_name: r.first_name,
    last_name: r.last_name,
    state: r.state,
    postal_code: r.postal_code,
    email: r.email,
    date_of_birth: r.date_of_birth,
    timezone: r.timezone,
    status: r.status,
    attempts: r.attempts,
    next_attempt_at: r.next_attempt_at?.toISOString() ?? null,
    check: r.check,
    check_reason: r.check_reason,
    line_type: r.line_type,
    timezone_used: r.zones,
    next_call_at: next.of(r),
    created_at: r.created_at.toISOString(),
  };
}

/** A page of the people in the company's list `listId`, in id (creation) order; `next_call_at` as of `now`. */
export async function listPeople(store: Store, tenantId: string, listId: string, cursor: string | undefined, now = Date.now()): Promise<{ items: PersonView[]; next_cursor: string | null }> {
  await findList(store, tenantId, listId);
  let q = personQuery(store, tenantId).where('p.list_id', '=', listId).orderBy('p.id').limit(PAGE_SIZE.people + 1);
  const after = checkCursor(cursor, 'per');
  if (after) q = q.where('p.id', '>', after);
  const [rows, rules] = await Promise.all([q.execute(), readLegalRules(store.db)]);
  const page = pageOf(rows, PAGE_SIZE.people);
  const next = new NextCalls(rules, now);
  return { items: page.items.map((r) => personView(r, next)), next_cursor: page.next_cursor };
}

/** The company's person `id`; 404 when it is not one of the company's. */
export async function findPerson(store: Store, tenantId: string, id: string, now = Date.now()): Promise<PersonView> {
  const [row, rules] = await Promise.all([personQuery(store, tenantId).where('p.id', '=', id).executeTakeFirst(), readLegalRules(store.db)]);
  if (!row) throw new NotFound(`no person ${id}`);
  return personView(row, new NextCalls(rules, now));
}

/** A lead as `POST /inbound/leads` takes it: the lead fields, with the caller's own id as `external_id`. */
const InboundLead = LeadInput.omit({ lead_id: true }).extend({ external_id: leadText(200) });

/** What `POST /inbound/leads` answers. */
export type InboundLeadsResult = Omit<LeadBatchResult, 'rejected_rows'> & { rejected_rows: Array<{ index: number; reason: string }> };

const INBOUND_ACCEPTED = { source: 'inbound_leads', outcome: 'accepted' } as const;
const INBOUND_REJECTED = { source: 'inbound_leads', outcome: 'rejected' } as const;

/** `POST /inbound/leads`: up to 10,000 leads into the company's list, by the lead import rules. */
export async function importInboundLeads(deps: PeopleDeps, tenantId: string, listId: string, leads: readonly unknown[]): Promise<InboundLeadsResult> {
  const r = await importLeadBatch(
    deps,
    tenantId,
    listId,
    leads,
    (item) => {
      const parsed = InboundLead.safeParse(item);
      if (!parsed.success) return { ok: false, reason: fieldProblem(parsed.error) };
      const { external_id, ...rest } = parsed.data;
      return { ok: true, input: { ...rest, lead_id: external_id } };
    },
    'lead',
  );
  // Committed by now: the rows in `vd_import_rows_total`.
  importRows.inc(INBOUND_ACCEPTED, r.received - r.rejected);
  importRows.inc(INBOUND_REJECTED, r.rejected);
  return { ...r, rejected_rows: r.rejected_rows.map(({ index, reason }) => ({ index, reason })) };
}
