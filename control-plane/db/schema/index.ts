/** The database type: every table, one file each, joined here. */
import type { ApiKeysTable } from './api-keys.ts';
import type { CallsTable } from './calls.ts';
import type { CampaignCountsTable, CampaignsTable } from './campaigns.ts';
import type { CompaniesTable } from './companies.ts';
import type { ListsTable, PeopleTable } from './core.ts';
import type { ActorsTable, AuditLogTable, OutboxPendingTable, OutboxTable } from './runtime.ts';
import type { DncNumbersTable } from './dnc.ts';
import type { DialingPausesTable, PlatformSettingsTable } from './dialing.ts';
import type { DialStatsTable, JourneysTable, UsageEventsTable } from './dialer.ts';
import type { MediaNodesTable } from './media-nodes.ts';
import type { ConnectorsTable, WebhookAttemptsTable, WebhookDeliveriesTable } from './connectors.ts';
import type { IdempotencyRecordsTable } from './idempotency.ts';
import type { SessionsTable } from './sessions.ts';
import type { CompanyUsersTable, OperatorsTable, RegisteredEmailsTable } from './users.ts';

export type { CompanyStatus, PlanName } from './companies.ts';
export type { CampaignState } from './campaigns.ts';
export type { PersonStatus } from './core.ts';
export type { UsageKind } from './dialer.ts';
export type { ConnectorKind, ConnectorState, DeliveryStatus } from './connectors.ts';

export interface DB {
  companies: CompaniesTable;
  operators: OperatorsTable;
  company_users: CompanyUsersTable;
  registered_emails: RegisteredEmailsTable;
  sessions: SessionsTable;
  api_keys: ApiKeysTable;
  idempotency_records: IdempotencyRecordsTable;
  dnc_numbers: DncNumbersTable;
  actors: ActorsTable;
  outbox: OutboxTable;
  outbox_pending: OutboxPendingTable;
  audit_log: AuditLogTable;
  campaigns: CampaignsTable;
  campaign_counts: CampaignCountsTable;
  calls: CallsTable;
  lists: ListsTable;
  people: PeopleTable;
  dialing_pauses: DialingPausesTable;
  platform_settings: PlatformSettingsTable;
  journeys: JourneysTable;
  usage_events: UsageEventsTable;
  dial_stats: DialStatsTable;
  media_nodes: MediaNodesTable;
  connectors: ConnectorsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}
