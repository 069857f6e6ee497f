/**
 * The operator's views of companies: the list (50 a page in creation order, searched and filtered,
 * with the list columns), the tree of companies and their sub-accounts, and one company's detail
 * with its health check. Read only; the company actor owns every change.
 */
import { sql } from 'kysely';
import { NotFound } from '../../shared/errors.ts';
import type { CompanyStatus, PlanName, UsageKind } from '../infra/db/schema/index.ts';
import { monthUsage as meteredUsage } from '../usage/ledger.ts';
import type { Store } from '../infra/db/store.ts';
import { PAGE_SIZE, pageOf, positionCursor } from '../infra/db/page.ts';
import { companyView, type CompanyView } from './create-company.ts';
import { readSwitch, type PauseRecord } from '../platform-controls/kill-switch.ts';
import { COLUMN_TIME_LIMIT_MS, gatherListColumns, minutesOf, withinTime, type ColumnSources, type ListColumns, type SourceReport } from './list-columns.ts';
import { planLimits, type PlanLimits } from './plans.ts';

/** Audit lines of each kind on the detail. */
export const AUDIT_LINES = 20;

/** A company as the list and the tree show it. */
export type CompanySummary = {
  id: string;
  name: string;
  slug: string;
  status: CompanyStatus;
  plan: PlanName;
  parent_id: string | null;
  created_at: string;
};

export type ListQuery = { q?: string; status?: CompanyStatus; cursor?: string };

const SUMMARY = ['c.id', 'c.name', 'c.slug', 'c.status', 'c.plan', 'c.parent_id', 'c.created_at'] as const;

function summary(r: { id: string; name: string; slug: string; status: CompanyStatus; plan: PlanName; parent_id: string | null; created_at: Date }): CompanySummary {
  return { id: r.id, name: r.name, slug: r.slug, status: r.status, plan: r.plan, parent_id: r.parent_id, created_at: r.created_at.toISOString() };
}

/** A LIKE pattern matching `text` anywhere, its own wildcards taken literally. */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}

/**
 * One page of the company list: companies in creation order after `cursor`, matching `q` (name
 * or slug, or the e-mail of any of the company's users, case-insensitive substring) and `status`,
 * each with its list columns.
 */
export async function listTenants(
  store: Store,
  sources: ColumnSources,
  query: ListQuery,
): Promise<{ items: Array<CompanySummary & ListColumns>; next_cursor: string | null }> {
  let q = store.db
    .selectFrom('companies as c')
    .select([...SUMMARY, sql<string>`to_char(c.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('position')]);
  const text = query.q?.trim();
  if (text) {
    const pattern = containing(text);
    q = q.where((eb) =>
      eb.or([
        eb('c.name', 'ilike', pattern),
        eb('c.slug', 'ilike', pattern),
        eb.exists(eb.selectFrom('company_users as u').select(sql`1`.as('one')).whereRef('u.tenant_id', '=', 'c.id').where('u.email', 'ilike', pattern)),
      ]),
    );
  }
  if (query.status) q = q.where('c.status', '=', query.status);
  const after = positionCursor.check(query.cursor);
  if (after) q = q.where(sql<boolean>`(c.created_at, c.id) > (cast(${after[0]} as timestamptz), ${after[1]})`);
  const rows = await q.orderBy('c.created_at').orderBy('c.id').limit(PAGE_SIZE.companies + 1).execute();
  const { items: page, next_cursor } = pageOf(rows, PAGE_SIZE.companies, (last) => positionCursor.encode(last.position, last.id));
  const { columns } = await gatherListColumns(sources, page.map((r) => r.id));
  return { items: page.map((r) => ({ ...summary(r), ...columns.get(r.id)! })), next_cursor };
}

/**
 * Companies for a picker: name or slug containing `q` (case-insensitive), by name, at most `limit`;
 * `topLevel` only companies that may be a parent (not sub-accounts, not closing). No list columns.
 */
export async function pickCompanies(store: Store, q: string, opts: { limit?: number; topLevel?: boolean; id?: string } = {}): Promise<CompanySummary[]> {
  let query = store.db.selectFrom('companies as c').select(SUMMARY);
  if (opts.id) query = query.where('c.id', '=', opts.id);
  const text = q.trim();
  if (text) query = query.where((eb) => eb.or([eb('c.name', 'ilike', containing(text)), eb('c.slug', 'ilike', containing(text))]));
  if (opts.topLevel) query = query.where('c.parent_id', 'is', null).where('c.status', '!=', 'closing');
  const rows = await query.orderBy('c.name').orderBy('c.id').limit(opts.limit ?? 10).execute();
  return rows.map(summary);
}

/** Every top-level company in creation order, each with its sub-accounts (one level) nested. */
export async function tenantTree(store: Store): Promise<{ items: Array<CompanySummary & { sub_accounts: CompanySummary[] }> }> {
  const rows = await store.db.selectFrom('companies as c').select(SUMMARY).orderBy('c.created_at').orderBy('c.id').execute();
  const subs = new Map<string, CompanySummary[]>();
  for (const r of rows) {
    if (r.parent_id) subs.set(r.parent_id, [...(subs.get(r.parent_id) ?? []), summary(r)]);
  }
  return { items: rows.filter((r) => !r.parent_id).map((r) => ({ ...summary(r), sub_accounts: subs.get(r.id) ?? [] })) };
}

export type AuditLine = {
  id: string;
  at: string;
  actor_kind: string;
  actor_id: string | null;
  actor_email: string | null;
  action: string;
  reason: string | null;
  detail: unknown;
};

export type Person = { id: string; name: string; email: string; roles: string[]; created_at: string };

/**
 * This month's usage (UTC): calls, talk minutes and AI minutes of calls started in the month, and
 * the quantity of every usage item kind the meter has counted for it (`items`).
 */
export type MonthUsage = { month: string; calls: number; talk_minutes: number; ai_minutes: number; items: Record<UsageKind, number> };

/** Whether the dialing kill switch holds a company: null when the switch could not be read. */
export type KillSwitchHealth = { global: PauseRecord | null; tenant: PauseRecord | null; holds: boolean | null; message: string | null };

/** A cap the health check may list: the plan's, or the abandonment cap holding a campaign. */
export type CapHit = keyof PlanLimits | 'abandon_cap';

export type Health = {
  sources: SourceReport[];
  gateway_suspended: boolean;
  core_suspended: boolean;
  agree: boolean;
  caps_hit: CapHit[];
  /** The campaigns the abandonment cap holds (`abandon_cap` among caps hit); null when the store did not answer in time. */
  abandon_capped_campaigns: Array<{ id: string; name: string }> | null;
  kill_switch: KillSwitchHealth;
};

export type TenantDetail = {
  tenant: CompanyView & { status_reason: string | null; closing_date: string | null; core_hold: boolean };
  /** Null (like the other store-read parts below) when the store did not answer in time. */
  people: Person[] | null;
  sub_accounts: CompanySummary[] | null;
  plan: { name: PlanName; limits: PlanLimits };
  live: ListColumns;
  usage_this_month: MonthUsage | null;
  platform_audit: AuditLine[] | null;
  company_audit: AuditLine[] | null;
  health: Health;
};

async function auditLines(store: Store, tenantId: string, scope: 'platform' | 'company'): Promise<AuditLine[]> {
  const rows = await store.db
    .selectFrom('audit_log')
    .select(['id', 'at', 'actor_kind', 'actor_id', 'actor_email', 'action', 'reason', 'detail'])
    .where('tenant_id', '=', tenantId)
    .where('scope', '=', scope)
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(AUDIT_LINES)
    .execute();
  return rows.map((r) => ({ ...r, at: r.at.toISOString() }));
}

async function monthUsage(store: Store, tenantId: string, now: Date): Promise<MonthUsage> {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const r = await store.db
    .selectFrom('calls')
    .select([sql<string>`count(*)`.as('calls'), sql<string | null>`sum(talk_seconds)`.as('talk'), sql<string | null>`sum(ai_seconds)`.as('ai')])
    .where('tenant_id', '=', tenantId)
    .where('started_at', '>=', start)
    .executeTakeFirstOrThrow();
  const month = start.toISOString().slice(0, 7);
  const items: Record<UsageKind, number> = { ai_second: 0, call_minute: 0, billable_transfer: 0, list_verify: 0, qa_review: 0 };
  for (const u of await meteredUsage(store.db, month, [tenantId])) items[u.kind] = Number(u.quantity);
  return { month, calls: Number(r.calls), talk_minutes: minutesOf(Number(r.talk ?? 0)), ai_minutes: minutesOf(Number(r.ai ?? 0)), items };
}

/** The store-read parts of the detail beyond the company row. */
async function detailParts(store: Store, tenantId: string) {
  const [people, subs, usage, platform, company, capped] = await Promise.all([
    store.db.selectFrom('company_users').select(['id', 'name', 'email', 'roles', 'created_at']).where('tenant_id', '=', tenantId).orderBy('created_at').orderBy('id').execute(),
    store.db.selectFrom('companies as c').select(SUMMARY).where('c.parent_id', '=', tenantId).orderBy('c.created_at').orderBy('c.id').execute(),
    monthUsage(store, tenantId, new Date()),
    auditLines(store, tenantId, 'platform'),
    auditLines(store, tenantId, 'company'),
    store.db.selectFrom('campaigns').select(['id', 'name']).where('tenant_id', '=', tenantId).where('abandon_held', '=', true).orderBy('id').execute(),
  ]);
  return {
    people: people.map((p) => ({ ...p, created_at: p.created_at.toISOString() })),
    sub_accounts: subs.map(summary),
    usage,
    platform,
    company,
    capped,
  };
}

/** The caps a company has reached; a cap whose count is unknown is left out. */
function capsHit(limits: PlanLimits, isSubAccount: boolean, users: number | null, subAccounts: number | null, liveCalls: number | null, abandonCapped: number | null): CapHit[] {
  const hit: CapHit[] = [];
  if (users !== null && users >= limits.users) hit.push('users');
  // A sub-account can have no sub-accounts whatever its plan: that is depth, not a cap.
  if (!isSubAccount && subAccounts !== null && subAccounts >= limits.sub_accounts) hit.push('sub_accounts');
  if (liveCalls !== null && liveCalls >= limits.concurrent_calls) hit.push('concurrent_calls');
  if (abandonCapped !== null && abandonCapped > 0) hit.push('abandon_cap');
  return hit;
}

/** One company's detail, or 404 `not_found`. Parts whose source did not answer in time are null. */
export async function tenantDetail(store: Store, sources: ColumnSources, tenantId: string, limitMs = COLUMN_TIME_LIMIT_MS): Promise<TenantDetail> {
  const row = await store.db.selectFrom('companies').selectAll().where('id', '=', tenantId).executeTakeFirst();
  if (!row) throw new NotFound(`no company ${tenantId}`);
  const [parts, live, pause] = await Promise.all([
    withinTime('store', limitMs, () => detailParts(store, tenantId)),
    gatherListColumns(sources, [tenantId], limitMs),
    withinTime('kill_switch', limitMs, () => readSwitch(store)),
  ]);
  const sw = pause.value;
  const p = parts.value;
  const columns = live.columns.get(tenantId)!;
  const limits = { ...planLimits(row.plan) };
  const gatewaySuspended = row.status !== 'on';
  return {
    tenant: { ...companyView(row), status_reason: row.status_reason, closing_date: row.closing_date, core_hold: row.core_hold },
    people: p?.people ?? null,
    sub_accounts: p?.sub_accounts ?? null,
    plan: { name: row.plan, limits },
    live: columns,
    usage_this_month: p?.usage ?? null,
    platform_audit: p?.platform ?? null,
    company_audit: p?.company ?? null,
    health: {
      sources: [parts.report, ...live.reports, pause.report],
      gateway_suspended: gatewaySuspended,
      core_suspended: row.core_hold,
      agree: gatewaySuspended === row.core_hold,
      caps_hit: capsHit(limits, row.parent_id !== null, p ? p.people.length : null, p ? p.sub_accounts.length : null, columns.live_calls, p ? p.capped.length : null),
      abandon_capped_campaigns: p?.capped ?? null,
      kill_switch: sw
        ? { global: sw.global, tenant: sw.tenants[tenantId] ?? null, holds: sw.global !== null || tenantId in sw.tenants, message: null }
        : { global: null, tenant: null, holds: null, message: 'the kill switch did not answer in time; whether it holds this company is unknown' },
    },
  };
}
