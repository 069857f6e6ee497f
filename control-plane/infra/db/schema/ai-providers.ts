/** The AI upstream of each purpose: base address, model and key (the key is never returned). */
import type { ColumnType } from 'kysely';

export type AiPurpose = 'bot' | 'qa' | 'transcription';

export interface AiProvidersTable {
  purpose: AiPurpose;
  base_url: string;
  model: string;
  /** Never returned by the API, never logged. */
  api_key: string | null;
  updated_at: ColumnType<Date, Date | undefined, Date>;
  /** The operator who last changed it. */
  updated_by: string | null;
}
