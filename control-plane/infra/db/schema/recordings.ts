/** Recordings of calls and imported recordings; the files are in the recording store. */
import type { ColumnType } from 'kysely';

export type RecordingSource = 'call' | 'import';
export type RecordingStatus = 'waiting_upload' | 'stored' | 'failed';
export type RecordingFormat = 'wav' | 'mp3';

export interface RecordingsTable {
  /** `rec_…`. */
  id: string;
  tenant_id: string;
  /** The call recorded; null for an import that names no call. */
  call_id: string | null;
  campaign_id: string | null;
  source: RecordingSource;
  /** The recording import connection (source `import`). */
  connector_id: string | null;
  /** An import's source: `web <index address>` or `bucket <endpoint>/<bucket>` (`sourceIdentity`). */
  source_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** An import's unique name (web index id or address, bucket key); unique per company and source. */
  source_name: string | null;
  status: RecordingStatus;
  format: RecordingFormat;
  bytes: ColumnType<string | null, number | null | undefined, number | null>;
  duration_s: number | null;
  /** The file's key in the recording store; null until stored. */
  storage_key: string | null;
  /** When the media agent wrote the file. */
  written_at: Date | null;
  stored_at: Date | null;
  error: string | null;
  attempts: ColumnType<number, number | undefined, number>;
  created_at: ColumnType<Date, Date | undefined, never>;
}
