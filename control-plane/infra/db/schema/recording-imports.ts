/** Recording import runs and the files their connections' sources have listed (migration 0018). */
import type { ColumnType, Generated } from 'kysely';

export type ImportRunStatus = 'queued' | 'processing' | 'done' | 'failed';
export type ImportRunTrigger = 'manual' | 'schedule';
export type ImportFileStatus = 'waiting' | 'importing' | 'imported' | 'failed';

type Count = ColumnType<number, number | undefined, number>;

export interface RecordingImportRunsTable {
  /** `imp_…`. */
  id: string;
  tenant_id: string;
  connector_id: string;
  trigger: ImportRunTrigger;
  status: ColumnType<ImportRunStatus, ImportRunStatus | undefined, ImportRunStatus>;
  queued_at: ColumnType<Date, Date | undefined, Date>;
  started_at: Date | null;
  finished_at: Date | null;
  listed: Count;
  new: Count;
  imported: Count;
  skipped: Count;
  failed: Count;
  /** Files taken to import by this run (at most per_run). */
  taken: Count;
  error: string | null;
  lease_owner: string | null;
  lease_until: Date | null;
  /** The instance that last took the run. */
  ran_by: ColumnType<string | null, string | null | undefined, string | null>;
}

/** How each file a run worked on ended in that run (migration 0023). */
export interface RecordingImportAttemptsTable {
  run_id: string;
  name: string;
  seq: Generated<string>;
  status: 'importing' | 'imported' | 'waiting' | 'failed';
  attempt: number;
  error: string | null;
}

export interface RecordingImportFilesTable {
  connector_id: string;
  /** The unique name: web index id (else full address) or bucket key. */
  name: string;
  tenant_id: string;
  seq: Generated<string>;
  status: ImportFileStatus;
  attempts: Count;
  error: string | null;
  url: string | null;
  format: 'wav' | 'mp3' | null;
  listed_bytes: ColumnType<string | null, number | null | undefined, number | null>;
  meta: ColumnType<Record<string, string | null> | null, string | null | undefined, string | null>;
  recording_id: string | null;
  run_id: string | null;
  first_seen_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
