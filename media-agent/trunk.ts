/**
 * The SIP adapter seen by the agent's client: place a call, get its events, hang it up. Two
 * implementations: the simulated trunk (demo, load tests, CI) and drachtio-srf (real SIP).
 */
import type { BotSessionEvent, CallHandler, EndReason, RefusalReason, TransferStage } from '../shared/agent-protocol.ts';
import type { RecordedFile } from './recordings.ts';

export type TrunkCall = {
  call_id: string;
  /** E.164 number to call. */
  to: string;
  /** E.164 caller id. */
  from: string;
  ring_timeout_s: number;
  handler: CallHandler;
};

/**
 * What happens to a call, in order: either `refused` alone (the trunk could not take it: nothing
 * was sent, the agent answers `call.refused`), or `placed` once (the INVITE left), `ringing` at
 * most once (180 or 183), `answered` at most once, `ended` exactly once
 * (after which no event comes for the call). Between `answered` and `ended` a bot-handled call
 * may be handed over to a person: `transfer` with stage `requested`, then `bridged` once the
 * person is on, then `completed` just before `ended` (a call that ends before the bridge gets no
 * `completed`). Only trunks that run the bot session report transfers (the simulated one does;
 * the drachtio trunk has no bot session and never does). An answered call's `ended` carries its
 * `recording` when the trunk records (the simulated one, when given a folder; the drachtio one
 * cannot: it has no media server).
 */
export type TrunkEvent =
  | { type: 'refused'; reason: Extract<RefusalReason, 'trunk_unavailable'> }
  | { type: 'placed'; sip_status: number }
  /** The far end rings (180) or sends early media (183); at most once, before `answered`. */
  | { type: 'ringing'; sip_status: number }
  | { type: 'answered'; sip_status: number }
  /** What the bot learned (a key and its value); only between `answered` and `ended`. */
  | { type: 'fact'; key: string; value: string | number | boolean }
  | { type: 'transfer'; stage: TransferStage }
  /** A bot session's start, end or failure, with the AI upstream's reply times since its last report. */
  | { type: 'bot'; event: BotSessionEvent; reply_ms?: number[] }
  | { type: 'ended'; sip_status: number; talk_seconds: number; reason: EndReason; bot_seconds?: number; transferred?: boolean; recording?: RecordedFile };

export interface Trunk {
  /** Connects to what carries the calls (a no-op for the simulated trunk). */
  start(): Promise<void>;
  /**
   * Whether calls can be placed now. A trunk without this is always available (the simulated
   * one); one with it (drachtio) calls the `onAvailability` listeners on every change.
   */
  readonly available?: boolean;
  onAvailability?(listener: (available: boolean) => void): void;
  /**
   * Places a call; `onEvent` gets its events. Never throws: a call that could not leave is a
   * `refused` event, a failure after it left an `ended` event.
   */
  originate(call: TrunkCall, onEvent: (event: TrunkEvent) => void): void;
  /** Ends a call: CANCEL while it rings, BYE once answered. Unknown ids are ignored. */
  hangup(callId: string): void;
  /** Disconnects; calls still up are left to the far end. */
  close(): Promise<void>;
}
