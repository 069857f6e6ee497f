/**
 * The audit log, the outbox's first consumer: every event that names who acted (`data.actor`)
 * becomes one audit line (who, what, when, reason). The event id is unique in the log, so an
 * event handled twice still writes one line.
 */
import { newId } from '../../shared/ids.ts';
import type { ConsumerHandler } from './outbox.ts';

/** Who acted, carried in an event's data. */
export type AuditActor = { kind: 'operator' | 'company' | 'system'; id: string | null; email: string | null };

export const auditConsumer: ConsumerHandler = async (tx, events) => {
  const rows = events
    .filter((e) => e.data && typeof e.data.actor === 'object' && e.data.actor !== null)
    .map((e) => {
      const actor = e.data.actor as AuditActor;
      return {
        id: newId('aud'),
        event_id: e.id,
        at: new Date(e.at),
        scope: actor.kind === 'operator' ? ('platform' as const) : ('company' as const),
        tenant_id: e.tenant_id,
        actor_kind: actor.kind,
        actor_id: actor.id,
        actor_email: actor.email,
        action: e.subject,
        reason: typeof e.data.reason === 'string' ? e.data.reason : null,
        detail: JSON.stringify(e.data),
      };
    });
  if (rows.length) await tx.insertInto('audit_log').values(rows).onConflict((oc) => oc.column('event_id').doNothing()).execute();
};
