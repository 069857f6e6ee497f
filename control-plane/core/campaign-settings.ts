/**
 * A campaign's dialing settings (issue 25): its calling window (the callee's local days and hours,
 * used inside the legal window), its retry policy (minutes to wait by outcome, attempts a person
 * gets) and its abandonment cap. Their shapes (the API's bodies and the console's forms are checked
 * with them), the defaults, and the change of a campaign's settings with its audit event
 * `vd.campaign.settings_changed`. They live in the campaign's row, which the dialer re-reads every
 * second, so a change holds on every instance within about a second; the campaign's actor holds
 * none of them.
 */
import { z } from 'zod';
import { isDeepStrictEqual } from 'node:util';
import { sql } from 'kysely';
import { NotFound } from '../../shared/errors.ts';
import type { Who } from '../../shared/who.ts';
import { ClockText } from '../compliance/legal-rules.ts';
import { parseClock } from '../compliance/calling-window.ts';
import type { CallingWindow, RetryPolicy, Weekday } from '../infra/db/schema/campaigns.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';

/** The week in the order a window's days are stored and shown. */
export const WEEK: readonly Weekday[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

/** The retry policy of a campaign that sets none (the column's default). */
export const DEFAULT_RETRY: RetryPolicy = { no_answer_minutes: 60, busy_minutes: 15, failed_minutes: 120, abandoned_minutes: 60, max_attempts: 3 };
/** The abandonment cap of a campaign that sets none; no campaign may set more. */
export const MAX_ABANDON_CAP_PERCENT = 3;
/** A retry wait's upper bound: one week. */
export const MAX_RETRY_MINUTES = 10_080;

/** `{days, start, end}`: days named, each once, at least one; `HH:MM` local, start before end. */
export const CallingWindowBody = z
  .strictObject({
    days: z
      .array(z.enum(WEEK as [Weekday, ...Weekday[]]))
      .min(1, 'at least one day')
      .refine((d) => new Set(d).size === d.length, 'each day at most once'),
    start: ClockText,
    end: ClockText,
  })
  .refine((w) => parseClock(w.start) === null || parseClock(w.end) === null || parseClock(w.start)! < parseClock(w.end)!, { message: 'start must be before end', path: ['end'] });

const minutes = z.number().int().min(0).max(MAX_RETRY_MINUTES);
/** The retry policy's fields; a body may give some of them (merged over the current policy). */
export const RetryBody = z.strictObject({
  no_answer_minutes: minutes.optional(),
  busy_minutes: minutes.optional(),
  failed_minutes: minutes.optional(),
  abandoned_minutes: minutes.optional(),
  max_attempts: z.number().int().min(1).max(20).optional(),
});
/** Percent of answered calls abandoned at which the campaign is held, 0 to 3. */
export const AbandonCapBody = z.number().min(0).max(MAX_ABANDON_CAP_PERCENT);

/** The settings fields of a create or a change (each optional). */
export const CampaignSettingsFields = {
  calling_window: CallingWindowBody.nullable().optional(),
  retry: RetryBody.optional(),
  abandon_cap_percent: AbandonCapBody.optional(),
};
/** `PATCH /api/core/v1/campaigns/{id}`: at least one of the settings. */
export const CampaignSettingsChange = z
  .strictObject(CampaignSettingsFields)
  .refine((b) => b.calling_window !== undefined || b.retry !== undefined || b.abandon_cap_percent !== undefined, 'send calling_window, retry or abandon_cap_percent');
export type CampaignSettingsChange = z.infer<typeof CampaignSettingsChange>;

/** The settings as a campaign reads. */
export type CampaignSettings = { calling_window: CallingWindow | null; retry: RetryPolicy; abandon_cap_percent: number };

/** A window as stored: its days in week order. */
export function storedWindow(w: { days: Weekday[]; start: string; end: string } | null): CallingWindow | null {
  return w ? { days: WEEK.filter((d) => w.days.includes(d)), start: w.start, end: w.end } : null;
}

/** `retry` given field by field, over `base`. */
export function mergedRetry(base: RetryPolicy, given: Partial<RetryPolicy> | undefined): RetryPolicy {
  const out = { ...base };
  for (const [k, v] of Object.entries(given ?? {})) if (v !== undefined) out[k as keyof RetryPolicy] = v;
  return out;
}

/**
 * The settings of a new campaign as its row's column values; settings not given are left to the
 * columns' defaults (every day in the legal window, `DEFAULT_RETRY`, 3 %).
 */
export function newCampaignSettings(input: { calling_window?: CallingWindow | null; retry?: Partial<RetryPolicy>; abandon_cap_percent?: number }) {
  return {
    ...(input.calling_window ? { calling_window: JSON.stringify(storedWindow(input.calling_window)) } : {}),
    ...(input.retry ? { retry: JSON.stringify(mergedRetry(DEFAULT_RETRY, input.retry)) } : {}),
    ...(input.abandon_cap_percent !== undefined ? { abandon_cap_percent: input.abandon_cap_percent } : {}),
  };
}

async function currentSettings(tx: Tx, tenantId: string, id: string): Promise<CampaignSettings> {
  const r = await sql<{ calling_window: CallingWindow | null; retry: RetryPolicy; abandon_cap_percent: string }>`
    select calling_window, retry, abandon_cap_percent::text as abandon_cap_percent from campaigns
    where id = ${id} and tenant_id = ${tenantId} for no key update`.execute(tx);
  const row = r.rows[0];
  if (!row) throw new NotFound(`no campaign ${id}`);
  // A policy written before a field existed reads with that field's default.
  return { calling_window: row.calling_window, retry: mergedRetry(DEFAULT_RETRY, row.retry), abandon_cap_percent: Number(row.abandon_cap_percent) };
}

/**
 * Changes the company's campaign `id`'s settings on behalf of `by`: the window replaced (null: every
 * day, the legal window), the retry policy's given fields over the current ones, the cap replaced.
 * Settings that end as they were are not written; when any changed, one event names each with its
 * before and after (the company's audit trail). 404 when the campaign is not the company's.
 */
export async function changeCampaignSettings(store: Store, tenantId: string, id: string, change: CampaignSettingsChange, by: Who): Promise<void> {
  await store.transaction(async (tx) => {
    const before = await currentSettings(tx, tenantId, id);
    const after: CampaignSettings = {
      calling_window: change.calling_window === undefined ? before.calling_window : storedWindow(change.calling_window),
      retry: mergedRetry(before.retry, change.retry),
      abandon_cap_percent: change.abandon_cap_percent ?? before.abandon_cap_percent,
    };
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    for (const k of Object.keys(after) as Array<keyof CampaignSettings>) {
      if (!isDeepStrictEqual(before[k], after[k])) changes[k] = { from: before[k], to: after[k] };
    }
    if (Object.keys(changes).length === 0) return;
    await tx
      .updateTable('campaigns')
      .set({
        calling_window: after.calling_window ? JSON.stringify(after.calling_window) : null,
        retry: JSON.stringify(after.retry),
        abandon_cap_percent: after.abandon_cap_percent,
        updated_at: new Date(),
      })
      .where('id', '=', id)
      .execute();
    await emit(tx, [{ subject: 'vd.campaign.settings_changed', tenant_id: tenantId, about: id, campaign_id: id, data: { actor: by, campaign_id: id, changes } }]);
  });
}
