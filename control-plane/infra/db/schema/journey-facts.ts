/** What bots learn on calls (`call.fact`): one value per journey and key, the latest. */
import type { ColumnType } from 'kysely';

export interface JourneyFactsTable {
  journey_id: string;
  key: string;
  /** A string, number or boolean, as the bot reported it. */
  value: ColumnType<string | number | boolean, string, string>;
  tenant_id: string;
  person_id: string | null;
  /** The call on which the bot learned it (the latest value's). */
  call_id: string;
  recorded_at: ColumnType<Date, Date | undefined, Date>;
}
