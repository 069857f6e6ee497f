/**
 * Results, read (`GET /api/core/v1/results`): the people of a company who have a result (an
 * outcome's disposition, or facts a bot learned on their calls), each with the result, how many
 * calls they got and the last one's start, and whether they are closed (nobody calls them again).
 * `facts` are the bot's (the latest value of each key over the person's journeys) under the
 * outcome's own (the company's word wins on a key both have); `disposition` is null while only a
 * bot has spoken; `result_at` is the latest change of either. Paged by person id; `campaign_id`
 * keeps the people of that campaign's lists, `since` those whose result changed at or after it.
 * Each also carries the person's zones (`timezone`, `timezone_used`) and `next_call_at`.
 */
import { sql } from 'kysely';
import { NotFound } from '../../shared/errors.ts';
import type { Store } from '../infra/db/store.ts';
import { checkCursor, PAGE_SIZE, pageOf } from '../infra/db/page.ts';
import type { PersonCheck, PersonStatus } from '../infra/db/schema/index.ts';
import { readLegalRules } from '../compliance/legal-rules.ts';
import { NextCalls } from './next-call.ts';

/** One person's result as the API shows it. */
export type ResultView = {
  person_id: string;
  list_id: string;
  external_id: string | null;
  /** The outcome's disposition; null while the person has only facts a bot learned. */
  disposition: string | null;
  note: string | null;
  facts: Record<string, unknown> | null;
  callback_at: string | null;
  result_at: string;
  calls: number;
  last_call_at: string | null;
  /** Nobody calls the person again: a final outcome closed them, or the dialer is done with them. */
  closed: boolean;
  /** When a final outcome closed the person's journey; null otherwise. */
  closed_at: string | null;
  /** The person's own IANA zone, as given; null when none was. */
  timezone: string | null;
  /** The zones the list check resolved (sorted); null until checked. */
  timezone_used: string[] | null;
  /** When the person's legal calling window next opens, at or after their next attempt; null when nobody will call them. */
  next_call_at: string | null;
};

type Row = Omit<ResultView, 'callback_at' | 'result_at' | 'last_call_at' | 'closed_at' | 'next_call_at'> & {
  callback_at: Date | null;
  result_at: Date;
  last_call_at: Date | null;
  closed_at: Date | null;
  status: PersonStatus;
  check: PersonCheck;
  next_attempt_at: Date | null;
  region: string | null;
};

/** A page of the company's results after `cursor`; a campaign not the company's is 404. */
export async function listResults(
  store: Store,
  tenantId: string,
  q: { campaign_id?: string; since?: string; cursor?: string },
  now = Date.now(),
): Promise<{ items: ResultView[]; next_cursor: string | null }> {
  const after = checkCursor(q.cursor, 'per');
  let lists: string[] | null = null;
  if (q.campaign_id !== undefined) {
    const c = await store.db.selectFrom('campaigns').select('list_ids').where('tenant_id', '=', tenantId).where('id', '=', q.campaign_id).executeTakeFirst();
    if (!c) throw new NotFound(`no campaign ${q.campaign_id}`);
    lists = c.list_ids;
  }
  const limit = PAGE_SIZE.results + 1;
  // The page's people: the next ones by id with an outcome (people_results) or with a fact
  // (journey_facts_person), each side stopping at a page.
  const rows = await sql<Row>`
    with ids as (
      (select p.id from people p
        where p.tenant_id = ${tenantId} and p.result_at is not null
          ${lists ? sql`and p.list_id = any(${lists}::text[])` : sql``}
          ${q.since ? sql`and p.result_at >= ${q.since}::timestamptz` : sql``}
          ${after ? sql`and p.id > ${after}` : sql``}
        order by p.id limit ${limit})
      union
      (select f.person_id from journey_facts f ${lists ? sql`join people q on q.id = f.person_id and q.list_id = any(${lists}::text[])` : sql``}
        where f.tenant_id = ${tenantId} and f.person_id is not null
          ${q.since ? sql`and f.recorded_at >= ${q.since}::timestamptz` : sql``}
          ${after ? sql`and f.person_id > ${after}` : sql``}
        group by f.person_id order by f.person_id limit ${limit}))
    select p.id as person_id, p.list_id, p.lead_id as external_id, p.disposition, p.note,
      case when b.facts is null then p.facts else b.facts || coalesce(p.facts, '{}'::jsonb) end as facts,
      p.callback_at, greatest(p.result_at, b.at) as result_at,
      k.calls, k.last_call_at, p.status = 'done' as closed, p.closed_at,
      p.timezone, z.zones as timezone_used, z.region, p.status, p."check", p.next_attempt_at
    from (select id from ids order by id limit ${limit}) i
    join people p on p.id = i.id and p.tenant_id = ${tenantId}
    cross join lateral (select count(*)::int as calls, max(started_at) as last_call_at from calls where person_id = p.id) k
    left join lateral (
      select jsonb_object_agg(l.key, l.value) as facts, max(l.recorded_at) as at
      from (select distinct on (f.key) f.key, f.value, f.recorded_at from journey_facts f
        where f.tenant_id = ${tenantId} and f.person_id = p.id order by f.key, f.recorded_at desc) l) b on true
    left join callee_zones z on z.id = p.zone_id
    order by p.id`.execute(store.db);
  const page = pageOf(rows.rows, PAGE_SIZE.results, (r) => r.person_id);
  const next = new NextCalls(await readLegalRules(store.db), now);
  return {
    items: page.items.map(({ status, check, next_attempt_at, region, ...r }) => ({
      ...r,
      callback_at: r.callback_at?.toISOString() ?? null,
      result_at: r.result_at.toISOString(),
      last_call_at: r.last_call_at?.toISOString() ?? null,
      closed_at: r.closed_at?.toISOString() ?? null,
      next_call_at: next.of({ status, check, closed_at: r.closed_at, next_attempt_at, zones: r.timezone_used, region }),
    })),
    next_cursor: page.next_cursor,
  };
}
