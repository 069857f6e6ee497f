/** Every migration, in order. A static list, so the migrator works the same from any folder. */
import type { Migration } from 'kysely';
import * as foundation from './20261121_0001_foundation.ts';
import * as actors from './20261121_0002_actors.ts';
import * as calls from './20261121_0003_calls.ts';
import * as core from './20261121_0004_core.ts';
import * as dialingPause from './20261121_0005_dialing_pause.ts';
import * as dialer from './20261121_0006_dialer.ts';
import * as mediaNodes from './20261121_0007_media_nodes.ts';
import * as webhooks from './20261122_0008_webhooks.ts';
import * as dialerLocks from './20261123_0009_dialer_locks.ts';
import * as nodeTrunkDown from './20261124_0010_node_trunk_down.ts';
import * as listChecks from './20261125_0011_list_checks.ts';
import * as results from './20261125_0012_results.ts';
import * as imports from './20261125_0013_imports.ts';
import * as usageMeter from './20261125_0014_usage_meter.ts';
import * as billing from './20261125_0015_billing.ts';
import * as accounts from './20261125_0016_accounts.ts';
import * as recordings from './20261126_0017_recordings.ts';
import * as recordingImports from './20261126_0018_recording_imports.ts';
import * as qa from './20261126_0019_qa.ts';
import * as aiOps from './20261126_0020_ai_ops.ts';
import * as webhookIndexes from './20261126_0021_webhook_indexes.ts';
import * as aiSamplesReplyTimes from './20261126_0022_ai_samples_reply_times.ts';
import * as recordingIdentity from './20261126_0023_recording_identity.ts';
import * as peopleRoomForChecks from './20261126_0024_people_room_for_checks.ts';
import * as bulkParentChecks from './20261126_0025_bulk_parent_checks.ts';
import * as webhookOpen from './20261126_0026_webhook_open.ts';
import * as webhookBodiesInSql from './20261126_0027_webhook_bodies_in_sql.ts';
import * as dialingRules from './20261128_0028_dialing_rules.ts';
import * as calleeZoneRowsKept from './20261128_0030_callee_zone_rows_kept.ts';
import * as callsUnderControl from './20261128_0033_calls_under_control.ts';
import * as liveCallsSamples from './20261128_0034_live_calls_samples.ts';
import * as webhookTextsBackfilled from './20261128_0035_webhook_texts_backfilled.ts';

export const migrations: Record<string, Migration> = {
  '20261121_0001_foundation': foundation,
  '20261121_0002_actors': actors,
  '20261121_0003_calls': calls,
  '20261121_0004_core': core,
  '20261121_0005_dialing_pause': dialingPause,
  '20261121_0006_dialer': dialer,
  '20261121_0007_media_nodes': mediaNodes,
  '20261122_0008_webhooks': webhooks,
  '20261123_0009_dialer_locks': dialerLocks,
  '20261124_0010_node_trunk_down': nodeTrunkDown,
  '20261125_0011_list_checks': listChecks,
  '20261125_0012_results': results,
  '20261125_0013_imports': imports,
  '20261125_0014_usage_meter': usageMeter,
  '20261125_0015_billing': billing,
  '20261125_0016_accounts': accounts,
  '20261126_0017_recordings': recordings,
  '20261126_0018_recording_imports': recordingImports,
  '20261126_0019_qa': qa,
  '20261126_0020_ai_ops': aiOps,
  '20261126_0021_webhook_indexes': webhookIndexes,
  '20261126_0022_ai_samples_reply_times': aiSamplesReplyTimes,
  '20261126_0023_recording_identity': recordingIdentity,
  '20261126_0024_people_room_for_checks': peopleRoomForChecks,
  '20261126_0025_bulk_parent_checks': bulkParentChecks,
  '20261126_0026_webhook_open': webhookOpen,
  '20261126_0027_webhook_bodies_in_sql': webhookBodiesInSql,
  '20261128_0028_dialing_rules': dialingRules,
  '20261128_0030_callee_zone_rows_kept': calleeZoneRowsKept,
  '20261128_0033_calls_under_control': callsUnderControl,
  '20261128_0034_live_calls_samples': liveCallsSamples,
  '20261128_0035_webhook_texts_backfilled': webhookTextsBackfilled,
};
