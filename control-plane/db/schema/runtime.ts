/** Durable actors' snapshots, the outbox of domain events, and the audit log (its first consumer). */
import type { ColumnType, Generated } from 'kysely';

export interface ActorsTable {
  kind: string;
  id: string;
  machine_version: number;
  snapshot: unknown;
  /** Raised by each new owner; a write with an older epoch is refused (fencing). */
  epoch: number;
  owner: string | null;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface OutboxTable {
  seq: Generated<string>;
  id: string;
  tenant_id: string | null;
  at: Date;
  source: string;
  subject: string;
  /** What the event is about (a company, campaign or call id), for filters and logs. */
  about: string | null;
  campaign_id: string | null;
  data: unknown;
}

/** One row per event and consumer still to handle it; consumers claim rows with SKIP LOCKED. */
export interface OutboxPendingTable {
  consumer: string;
  seq: string;
  event_id: string;
}

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
