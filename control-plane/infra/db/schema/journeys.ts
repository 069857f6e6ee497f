/** Journeys: a person's way through a campaign, from the first call to its close. */
import type { ColumnType } from 'kysely';

/** A person's journey through one campaign (manual calls to a bare number get one each). */
export interface JourneysTable {
  id: string;
  tenant_id: string;
  campaign_id: string | null;
  person_id: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  closed_at: Date | null;
}
