/**
 * The media agent wire protocol (WebSocket `/agent/v1`), shared by the control plane's agent hub
 * and the media agent. JSON text frames `{type, ...}`; every frame is validated with zod on
 * arrival and a frame of an unknown type is refused. The whole protocol is written out in
 * `docs/agent-protocol.md`.
 */
import { z } from 'zod';

/** The path of the WebSocket endpoint on the control plane's HTTP port. */
export const AGENT_PROTOCOL_PATH = '/agent/v1';
/** How often an agent sends a heartbeat. */
export const HEARTBEAT_INTERVAL_MS = 2_000;
/** A node silent this long is offline. */
export const OFFLINE_AFTER_MS = 5_000;
/** Longest call a report may claim (a week): anything longer is a broken agent. */
export const MAX_CALL_SECONDS = 7 * 24 * 3600;
/** Largest frame either side accepts. */
export const MAX_FRAME_BYTES = 64 * 1024;
/**
 * Most call ids a `hello` or `heartbeat` lists in `call_ids` (1,000 ids of up to 40 characters fit
 * a frame with room to spare). An agent with more to list sends no `call_ids` at all, and the
 * control plane then ends none of its calls for being absent.
 */
export const MAX_REPORTED_CALLS = 1_000;

/**
 * Why a node drains: an operator's command, its own process shutting down, or its SIP trunk
 * being down (the agent lifts that one itself when the trunk is back; an operator cannot).
 */
export const drainReason = z.enum(['operator', 'shutdown', 'trunk_down']);
export type DrainReason = z.infer<typeof drainReason>;

const nodeId = z.string().min(1).max(128);
const callId = z.string().min(1).max(128);
const epoch = z.number().int().nonnegative();
const count = z.number().int().nonnegative();
/**
 * The calls the agent still has: every call it took (an `originate` it did not refuse) whose
 * `call.ended` (or `call.refused`) it has not sent yet, whether the call is still up or its end
 * waits to be sent after this connection's `welcome`. The control plane ends the calls it has up
 * on the node that are not listed (docs/agent-protocol.md, "Calls a node no longer has").
 */
const callIds = z.array(callId).max(MAX_REPORTED_CALLS);

// ---- agent → control plane ----

export const helloMessage = z.object({
  type: z.literal('hello'),
  node_id: nodeId,
  capacity: count,
  version: z.string().min(1).max(64),
  region: z.string().min(1).max(64),
  /** Carried over a reconnect: a node that was draining says so at once. */
  draining: z.boolean().optional(),
  reason: drainReason.optional(),
  call_ids: callIds.optional(),
  /** When the agent's process started (ISO 8601 UTC): its uptime on `/ops/services`. */
  started_at: z.iso.datetime().optional(),
});

export const heartbeatMessage = z.object({
  type: z.literal('heartbeat'),
  live_calls: count,
  capacity: count,
  draining: z.boolean(),
  reason: drainReason.optional(),
  call_ids: callIds.optional(),
});

/** How a call ended, as the agent saw it. */
export const endReason = z.enum(['completed', 'busy', 'no_answer', 'failed', 'canceled', 'hangup', 'abandoned', 'trunk_lost']);
export type EndReason = z.infer<typeof endReason>;

const callEventFields = {
  call_id: callId,
  /** The SIP status the event rests on: 100 placed, 200 answered, final status when ended. */
  sip_status: z.number().int().min(100).max(699),
  /** Seconds from answer to end (0 until the end, and for an unanswered call). */
  talk_seconds: z.number().nonnegative().max(MAX_CALL_SECONDS),
  /** Seconds an AI bot session held the call (bot-handled calls only). */
  bot_seconds: z.number().nonnegative().max(MAX_CALL_SECONDS).optional(),
  /** The bot handed the call over to a person. */
  transferred: z.boolean().optional(),
  /** When the event happened on the agent (ISO 8601 UTC). */
  at: z.iso.datetime().optional(),
};

/** The INVITE left (SIP 100): the call is `trying` until the far end rings. */
export const callPlacedMessage = z.object({ type: z.literal('call.placed'), ...callEventFields });
/** The far end rings (180) or sends early media (183): the call is `ringing`. Once per call, between placed and answered. */
export const callRingingMessage = z.object({ type: z.literal('call.ringing'), ...callEventFields, sip_status: z.number().int().min(180).max(199) });
export const callAnsweredMessage = z.object({ type: z.literal('call.answered'), ...callEventFields });
export const callEndedMessage = z.object({ type: z.literal('call.ended'), ...callEventFields, reason: endReason.optional() });

/**
 * A bot's hand-over of a call to a person: `requested` when the bot session ends and asks for a
 * person, `bridged` when the person is on the call, `completed` when the transferred call ends.
 */
export const transferStage = z.enum(['requested', 'bridged', 'completed']);
export type TransferStage = z.infer<typeof transferStage>;
export const callTransferMessage = z.object({
  type: z.literal('call.transfer'),
  call_id: callId,
  stage: transferStage,
  /** When the stage was reached on the agent (ISO 8601 UTC). */
  at: z.iso.datetime().optional(),
});

/** Largest string a fact's value may be. */
export const MAX_FACT_VALUE_CHARS = 1_000;
/**
 * What a bot learned on a call: a key (1 to 64 of `A-Z a-z 0-9 _ . -`) and its value (a string
 * of at most 1,000 characters, a finite number or a boolean). A fact said again with the same
 * value changes nothing; a new value replaces the old one for the person's journey.
 */
export const callFactMessage = z.object({
  type: z.literal('call.fact'),
  call_id: callId,
  key: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'expected 1 to 64 of A-Z, a-z, 0-9, _, . and -'),
  value: z.union([z.string().max(MAX_FACT_VALUE_CHARS), z.number().finite(), z.boolean()]),
  /** When the bot learned it, on the agent (ISO 8601 UTC). */
  at: z.iso.datetime().optional(),
});

export const refusalReason = z.enum(['draining', 'at_capacity', 'duplicate', 'trunk_unavailable']);
export type RefusalReason = z.infer<typeof refusalReason>;
export const callRefusedMessage = z.object({ type: z.literal('call.refused'), call_id: callId, reason: refusalReason });

/** Largest recording file an agent uploads (`PUT /agent/v1/recordings/{call_id}`) is the control plane's VD_RECORDING_MAX_MB. */
export const recordingFormat = z.enum(['wav', 'mp3']);
export type RecordingFormat = z.infer<typeof recordingFormat>;

/**
 * A call's recording: `recording.waiting_upload` once the agent has written the file (from then
 * the control plane knows a recording is owed, and counts a wait past 15 minutes as a gap);
 * `recording.failed` when the agent gave up uploading it (after its attempts, or at once when the
 * file is over the size limit).
 */
export const recordingWaitingMessage = z.object({
  type: z.literal('recording.waiting_upload'),
  call_id: callId,
  format: recordingFormat,
  bytes: count,
  /** When the file was written (ISO 8601 UTC). */
  written_at: z.iso.datetime(),
});
export const recordingFailedMessage = z.object({
  type: z.literal('recording.failed'),
  call_id: callId,
  format: recordingFormat,
  /** Upload attempts made. */
  attempts: count,
  error: z.string().max(500),
});
export type RecordingMessage = z.infer<typeof recordingWaitingMessage> | z.infer<typeof recordingFailedMessage>;

/** Most reply times one `bot.session` report carries (a session with more sends them in several). */
export const MAX_REPLY_TIMES = 200;
/** Longest reply time a report may claim (10 minutes): anything longer is a broken agent. */
export const MAX_REPLY_MS = 600_000;

/**
 * A bot session's report: `started` when the bot takes the answered call, `ended` when it lets the
 * call go (hung up, or handed over to a person), `failed` when the session broke (the AI upstream
 * failed, the bot could not go on). `reply_ms`: the upstream's reply times since the session's
 * last report, in milliseconds. The control plane stores them as AI samples (`/ai/health`).
 */
export const botSessionEvent = z.enum(['started', 'ended', 'failed']);
export type BotSessionEvent = z.infer<typeof botSessionEvent>;
export const botSessionMessage = z.object({
  type: z.literal('bot.session'),
  call_id: callId,
  event: botSessionEvent,
  reply_ms: z.array(z.number().nonnegative().max(MAX_REPLY_MS)).max(MAX_REPLY_TIMES).optional(),
  /** When it happened on the agent (ISO 8601 UTC). */
  at: z.iso.datetime().optional(),
});

export const agentMessage = z.discriminatedUnion('type', [
  helloMessage,
  heartbeatMessage,
  callPlacedMessage,
  callRingingMessage,
  callAnsweredMessage,
  callEndedMessage,
  callTransferMessage,
  callFactMessage,
  callRefusedMessage,
  recordingWaitingMessage,
  recordingFailedMessage,
  botSessionMessage,
]);

export type HelloMessage = z.infer<typeof helloMessage>;
export type HeartbeatMessage = z.infer<typeof heartbeatMessage>;
export type CallPlacedMessage = z.infer<typeof callPlacedMessage>;
export type CallRingingMessage = z.infer<typeof callRingingMessage>;
export type CallAnsweredMessage = z.infer<typeof callAnsweredMessage>;
export type CallEndedMessage = z.infer<typeof callEndedMessage>;
export type CallTransferMessage = z.infer<typeof callTransferMessage>;
export type CallRefusedMessage = z.infer<typeof callRefusedMessage>;
export type CallFactMessage = z.infer<typeof callFactMessage>;
export type BotSessionMessage = z.infer<typeof botSessionMessage>;
export type CallEventMessage = CallPlacedMessage | CallRingingMessage | CallAnsweredMessage | CallEndedMessage | CallTransferMessage | CallFactMessage | CallRefusedMessage;
export type AgentMessage = z.infer<typeof agentMessage>;

// ---- control plane → agent ----

export const welcomeMessage = z.object({ type: z.literal('welcome'), epoch });

export const callHandler = z.enum(['bot', 'agents']);
export type CallHandler = z.infer<typeof callHandler>;

export const originateMessage = z.object({
  type: z.literal('originate'),
  epoch,
  call_id: callId,
  /** E.164 number to call. */
  to: z.string().min(2).max(32),
  /** E.164 caller id. */
  from: z.string().min(2).max(32),
  ring_timeout_s: z.number().positive().max(600),
  handler: callHandler,
});

export const hangupMessage = z.object({ type: z.literal('hangup'), epoch, call_id: callId });
export const drainMessage = z.object({ type: z.literal('drain'), epoch });
export const resumeMessage = z.object({ type: z.literal('resume'), epoch });

export const controlMessage = z.discriminatedUnion('type', [
  welcomeMessage,
  originateMessage,
  hangupMessage,
  drainMessage,
  resumeMessage,
]);

export type WelcomeMessage = z.infer<typeof welcomeMessage>;
export type OriginateMessage = z.infer<typeof originateMessage>;
export type HangupMessage = z.infer<typeof hangupMessage>;
export type DrainMessage = z.infer<typeof drainMessage>;
export type ResumeMessage = z.infer<typeof resumeMessage>;
export type ControlMessage = z.infer<typeof controlMessage>;
/** A command: a control message that carries an epoch and that the agent acts on. */
export type ControlCommand = Exclude<ControlMessage, WelcomeMessage>;
/** The call fields of an originate, without its type and epoch. */
export type OriginateCall = Omit<OriginateMessage, 'type' | 'epoch'>;

// ---- parsing ----

export type Parsed<T> = { ok: true; message: T } | { ok: false; error: string };

function parseWith<T>(schema: z.ZodType<T>, known: readonly string[], raw: string | Buffer | ArrayBuffer | Buffer[]): Parsed<T> {
  let text: string;
  if (typeof raw === 'string') text = raw;
  else if (Array.isArray(raw)) text = Buffer.concat(raw).toString('utf8');
  else text = Buffer.from(raw as ArrayBuffer).toString('utf8');
  if (text.length > MAX_FRAME_BYTES) return { ok: false, error: 'frame too large' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, error: 'not JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, error: 'not a JSON object' };
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string' || !known.includes(type)) return { ok: false, error: `unknown message type ${JSON.stringify(type ?? null).slice(0, 64)}` };
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    return { ok: false, error: `bad ${type}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(message)'}: ${i.message}`).join('; ')}` };
  }
  return { ok: true, message: parsed.data };
}

export const AGENT_MESSAGE_TYPES = ['hello', 'heartbeat', 'call.placed', 'call.ringing', 'call.answered', 'call.ended', 'call.transfer', 'call.fact', 'call.refused', 'recording.waiting_upload', 'recording.failed', 'bot.session'] as const;
export const CONTROL_MESSAGE_TYPES = ['welcome', 'originate', 'hangup', 'drain', 'resume'] as const;

/** Parses a frame an agent sent to the control plane. */
export function parseAgentMessage(raw: string | Buffer | ArrayBuffer | Buffer[]): Parsed<AgentMessage> {
  return parseWith(agentMessage, AGENT_MESSAGE_TYPES, raw);
}

/** Parses a frame the control plane sent to an agent. */
export function parseControlMessage(raw: string | Buffer | ArrayBuffer | Buffer[]): Parsed<ControlMessage> {
  return parseWith(controlMessage, CONTROL_MESSAGE_TYPES, raw);
}
