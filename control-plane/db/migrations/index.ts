/** Every migration, in order. A static list, so the migrator works the same from any folder. */
import type { Migration } from 'kysely';
import * as foundation from './20261121_0001_foundation.ts';

export const migrations: Record<string, Migration> = {
  '20261121_0001_foundation': foundation,
};
