/**
 * The audit log, the outbox's first consumer: every event that names who acted (`data.actor`)
 * becomes one audit line (who, what, when, reason). The event id is unique in the log, so an
 * event handled twice still writes one line.
 */
import { sql } from 'kysely';
import { newIds } from '../../../shared/ids.ts';
import type { ConsumerHandler } from './outbox.ts';

/** Who acted, carried in an event's data. */
export type AuditActor = { kind: 'operator' | 'company' | 'system'; id: string | null; email: string | null };

export const auditConsumer: ConsumerHandler = async (tx, events) => {
  const rows = events.filter((e) => e.data && typeof e.data.actor === 'object' && e.data.actor !== null);
  if (rows.length === 0) return;
  const actors = rows.map((e) => e.data.actor as AuditActor);
  // One statement whose values are arrays, as the outbox writes events: a suspension's hundred
  // campaign events are 11 parameters, not 1,100 to compile and send.
  await sql`
    insert into audit_log (id, event_id, at, scope, tenant_id, actor_kind, actor_id, actor_email, action, reason, detail)
    select x.id, x.event_id, x.at, x.scope, x.tenant_id, x.actor_kind, x.actor_id, x.actor_email, x.action, x.reason, x.detail::jsonb
    from unnest(${newIds('aud', rows.length)}::text[], ${rows.map((e) => e.id)}::text[], ${rows.map((e) => e.at)}::timestamptz[],
      ${actors.map((a) => (a.kind === 'operator' ? 'platform' : 'company'))}::text[], ${rows.map((e) => e.tenant_id)}::text[],
      ${actors.map((a) => a.kind)}::text[], ${actors.map((a) => a.id)}::text[], ${actors.map((a) => a.email)}::text[],
      ${rows.map((e) => e.subject)}::text[], ${rows.map((e) => (typeof e.data.reason === 'string' ? e.data.reason : null))}::text[],
      ${rows.map((e) => JSON.stringify(e.data))}::text[]) as x(id, event_id, at, scope, tenant_id, actor_kind, actor_id, actor_email, action, reason, detail)
    on conflict (event_id) do nothing`.execute(tx);
};
