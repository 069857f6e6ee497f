/** Calls, one row each, from the moment the dialer places it until it ends. */
import type { ColumnType } from 'kysely';

/** `dialing` (sent to a node) → `trying` (INVITE sent) → `ringing` (180 or 183) → `answered` → `ended`. */
export type CallState = 'dialing' | 'trying' | 'ringing' | 'answered' | 'ended';

export interface CallsTable {
  id: string;
  tenant_id: string;
  campaign_id: string | null;
  person_id: string | null;
  /** The media node carrying the call. */
  node_id: string | null;
  to_number: string;
  from_number: string;
  state: CallState;
  /** `state <> 'ended'`, stored (generated): what the indexes of calls up are on. */
  live: ColumnType<boolean, never, never>;
  /** Who handled the answered call: an AI bot session or a human agent. */
  handler: 'bot' | 'agent' | null;
  started_at: ColumnType<Date, Date | undefined, Date>;
  answered_at: Date | null;
  ended_at: Date | null;
  talk_seconds: ColumnType<number, number | undefined, number>;
  ai_seconds: ColumnType<number, number | undefined, number>;
  end_reason: string | null;
  /** The call was answered and then lost without a handler (the "dropped calls" column). */
  dropped: ColumnType<boolean, boolean | undefined, boolean>;
  journey_id: string | null;
  /** 'outbound' for every call the dialer places. */
  direction: ColumnType<string, string | undefined, string>;
  /** The SIP status the call's last event rested on. */
  sip_status: number | null;
  /** The control-plane instance that launched the call (it holds the node slot). */
  launched_by: string | null;
  /** Placed by a person (manual dial), not by the pacing loop. */
  manual: ColumnType<boolean, boolean | undefined, boolean>;
  /** Hand-over to a person: requested, bridged, completed; null when none. */
  transfer_state: 'requested' | 'bridged' | 'completed' | null;
  /** When someone hung the call up through the API (its end is then `hung_up`). */
  hangup_requested_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** When the agent's own end corrected the talk time of a call the platform had ended as `node_lost`. */
  end_corrected_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}
