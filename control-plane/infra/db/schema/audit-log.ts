/** The audit log: who did what, when and why (the outbox's first consumer writes it). */

export interface AuditLogTable {
  id: string;
  event_id: string | null;
  at: Date;
  /** platform: an operator's action; company: an action inside the company. */
  scope: 'platform' | 'company';
  tenant_id: string | null;
  actor_kind: string;
  actor_id: string | null;
  actor_email: string | null;
  action: string;
  reason: string | null;
  detail: unknown;
}
