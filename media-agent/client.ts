/**
 * The agent's end of the protocol (docs/agent-protocol.md): connects to the control plane with
 * its bearer token, says hello, sends heartbeats every 2 s, reconnects with exponential backoff
 * and jitter (capped at 10 s), ignores commands older than the latest welcome's epoch, places
 * calls on its trunk and reports their events. Call events that happen while the socket is down
 * are kept (up to a bound) and sent after the next welcome.
 */
import { WebSocket } from 'ws';
import {
  HEARTBEAT_INTERVAL_MS,
  MAX_FRAME_BYTES,
  MAX_REPORTED_CALLS,
  parseControlMessage,
  type AgentMessage,
  type BotSessionMessage,
  type CallEventMessage,
  type ControlCommand,
  type DrainReason,
  type OriginateMessage,
  type RecordingMessage,
  type RefusalReason,
} from '../shared/agent-protocol.ts';
import { RecordingUploader, type UploadOptions } from './recordings.ts';
import type { Trunk, TrunkEvent } from './trunk.ts';

import type { AgentLog } from './log.ts';
export type { AgentLog };

export type AgentClientOptions = {
  url: string;
  token: string;
  nodeId: string;
  capacity: number;
  region: string;
  version: string;
  trunk: Trunk;
  log?: AgentLog;
  heartbeatMs?: number;
  backoffBaseMs?: number;
  backoffCapMs?: number;
  /** Retries of recording uploads (media-agent/recordings.ts). */
  recording?: UploadOptions;
};

const MAX_PENDING_EVENTS = 10_000;
/** Most bytes the `call_ids` of a hello or heartbeat may take, so the frame stays well under the limit. */
const MAX_CALL_IDS_BYTES = MAX_FRAME_BYTES / 2;

/** When this process started, sent in `hello` (its uptime on `/ops/services`). */
const STARTED_AT = new Date(Date.now() - Math.round(process.uptime() * 1000)).toISOString();

/** The agent's version, sent in `hello`. */
export const AGENT_VERSION = '0.1.0';

export class AgentClient {
  readonly #o: Required<Omit<AgentClientOptions, 'log' | 'recording'>> & { log: AgentLog };
  #ws: WebSocket | null = null;
  #epoch = 0;
  #welcomed = false;
  #attempt = 0;
  #heartbeat: NodeJS.Timeout | null = null;
  #reconnect: NodeJS.Timeout | null = null;
  #stopped = false;
  /** The three causes of a drain, each kept on its own: the reason told is the strongest. */
  #shuttingDown = false;
  /** A second signal came: hang everything up, wait for nothing more. */
  #hurried = false;
  #operatorDrain = false;
  #trunkDown = false;
  readonly #calls = new Set<string>();
  #pending: Array<CallEventMessage | BotSessionMessage | RecordingMessage> = [];
  #idleWaiters: Array<() => void> = [];
  readonly #uploads: RecordingUploader;

  constructor(opts: AgentClientOptions) {
    this.#o = {
      heartbeatMs: HEARTBEAT_INTERVAL_MS,
      backoffBaseMs: 250,
      backoffCapMs: 10_000,
      log: () => {},
      ...opts,
    };
    this.#uploads = new RecordingUploader({ controlUrl: opts.url, token: opts.token, nodeId: opts.nodeId, report: (m) => this.#event(m), log: this.#o.log }, opts.recording);
  }

  get epoch(): number {
    return this.#epoch;
  }
  get liveCalls(): number {
    return this.#calls.size;
  }
  /** Recordings being uploaded (or waiting to try again). */
  get pendingUploads(): number {
    return this.#uploads.pending;
  }
  /** Queues the recordings a previous run left in `dir` (media-agent/recordings.ts `resume`). */
  resumeUploads(dir: string): Promise<number> {
    return this.#uploads.resume(dir);
  }
  /** Why the agent takes no calls now: shutdown, then an operator's drain, then its trunk being down. */
  get draining(): DrainReason | null {
    return this.#draining;
  }

  get #draining(): DrainReason | null {
    if (this.#shuttingDown) return 'shutdown';
    if (this.#operatorDrain) return 'operator';
    if (this.#trunkDown) return 'trunk_down';
    return null;
  }

  start(): void {
    const trunk = this.#o.trunk;
    if (trunk.onAvailability) {
      this.#trunkDown = trunk.available === false;
      if (this.#trunkDown) this.#o.log('warn', 'trunk down: draining until it is back', { reason: 'trunk_down' });
      trunk.onAvailability((available) => {
        if (this.#trunkDown === !available) return;
        this.#trunkDown = !available;
        if (available) this.#o.log('info', 'trunk back: no longer draining for it', { draining: this.#draining });
        else this.#o.log('warn', 'trunk down: draining until it is back', { reason: 'trunk_down' });
        this.#sendHeartbeat();
      });
    }
    this.#connect();
  }

  #connect(): void {
    if (this.#stopped) return;
    const ws = new WebSocket(this.#o.url, {
      headers: { authorization: `Bearer ${this.#o.token}` },
      maxPayload: MAX_FRAME_BYTES,
      handshakeTimeout: 5_000,
    });
    this.#ws = ws;
    this.#welcomed = false;
    ws.on('open', () => {
      this.#o.log('info', 'connected, saying hello', { url: this.#o.url });
      this.#sendNow({
        type: 'hello',
        node_id: this.#o.nodeId,
        capacity: this.#o.capacity,
        version: this.#o.version,
        region: this.#o.region,
        started_at: STARTED_AT,
        ...(this.#draining ? { draining: true, reason: this.#draining } : {}),
        ...this.#callIds(),
      });
    });
    ws.on('unexpected-response', (_req, res) => {
      this.#o.log('error', 'control plane refused the connection', { status: res.statusCode });
      res.resume();
      ws.terminate();
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const parsed = parseControlMessage(data as Buffer);
      if (!parsed.ok) {
        this.#o.log('warn', 'control frame refused', { error: parsed.error });
        return;
      }
      const msg = parsed.message;
      if (msg.type === 'welcome') {
        if (msg.epoch < this.#epoch) this.#o.log('warn', 'welcome with an older epoch than seen before', { epoch: msg.epoch, latest: this.#epoch });
        this.#epoch = Math.max(this.#epoch, msg.epoch);
        this.#welcomed = true;
        this.#attempt = 0;
        this.#o.log('info', 'registered', { epoch: msg.epoch });
        this.#sendHeartbeat();
        const pending = this.#pending;
        this.#pending = [];
        for (const e of pending) this.#sendNow(e);
        if (this.#heartbeat) clearInterval(this.#heartbeat);
        this.#heartbeat = setInterval(() => this.#sendHeartbeat(), this.#o.heartbeatMs);
        return;
      }
      this.#onCommand(msg);
    });
    ws.on('error', (err) => this.#o.log('warn', 'socket error', { err: err.message }));
    ws.on('close', (code, reason) => {
      if (this.#ws !== ws) return;
      this.#ws = null;
      this.#welcomed = false;
      if (this.#heartbeat) clearInterval(this.#heartbeat);
      this.#heartbeat = null;
      if (this.#stopped) return;
      const delay = this.#backoff();
      this.#o.log('warn', 'disconnected, reconnecting', { code, reason: reason.toString(), in_ms: delay });
      this.#reconnect = setTimeout(() => this.#connect(), delay);
    });
  }

  /** Exponential backoff with full jitter: random in [base·2^n / 2, base·2^n], capped. */
  #backoff(): number {
    const ceiling = Math.min(this.#o.backoffCapMs, this.#o.backoffBaseMs * 2 ** this.#attempt);
    this.#attempt = Math.min(this.#attempt + 1, 30);
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
  }

  #onCommand(cmd: ControlCommand): void {
    if (!this.#welcomed) return this.#o.log('warn', 'command before welcome ignored', { type: cmd.type });
    if (cmd.epoch < this.#epoch) {
      this.#o.log('warn', 'command with an older epoch ignored', { type: cmd.type, epoch: cmd.epoch, latest: this.#epoch });
      return;
    }
    switch (cmd.type) {
      case 'originate':
        return this.#originate(cmd);
      case 'hangup':
        return this.#o.trunk.hangup(cmd.call_id);
      case 'drain':
        this.#operatorDrain = true;
        this.#o.log('info', 'draining', { reason: this.#draining });
        return this.#sendHeartbeat();
      case 'resume':
        if (this.#shuttingDown) {
          this.#o.log('warn', 'resume refused: this process is shutting down');
        } else {
          this.#operatorDrain = false;
          // An operator's resume lifts only the operator's drain, never the trunk's.
          if (this.#trunkDown) this.#o.log('warn', 'resumed, but still draining: the trunk is down', { reason: 'trunk_down' });
          else this.#o.log('info', 'accepting calls again');
        }
        return this.#sendHeartbeat();
    }
  }

  #originate(cmd: OriginateMessage): void {
    const refuse = (reason: RefusalReason) => this.#event({ type: 'call.refused', call_id: cmd.call_id, reason });
    const draining = this.#draining;
    if (draining === 'trunk_down') return refuse('trunk_unavailable');
    if (draining) return refuse('draining');
    if (this.#calls.has(cmd.call_id)) return refuse('duplicate');
    if (this.#calls.size >= this.#o.capacity) return refuse('at_capacity');
    this.#calls.add(cmd.call_id);
    const { call_id } = cmd;
    this.#o.trunk.originate(
      { call_id, to: cmd.to, from: cmd.from, ring_timeout_s: cmd.ring_timeout_s, handler: cmd.handler },
      (e: TrunkEvent) => {
        if (e.type === 'refused') {
          // Nothing left: the call was never placed.
          this.#calls.delete(call_id);
          this.#event({ type: 'call.refused', call_id, reason: e.reason });
          this.#sendHeartbeat();
          if (this.#calls.size === 0) for (const w of this.#idleWaiters.splice(0)) w();
          return;
        }
        const at = new Date().toISOString();
        if (e.type === 'placed') return this.#event({ type: 'call.placed', call_id, sip_status: e.sip_status, talk_seconds: 0, at });
        if (e.type === 'ringing') return this.#event({ type: 'call.ringing', call_id, sip_status: e.sip_status, talk_seconds: 0, at });
        if (e.type === 'fact') return this.#event({ type: 'call.fact', call_id, key: e.key, value: e.value, at });
        if (e.type === 'answered') return this.#event({ type: 'call.answered', call_id, sip_status: e.sip_status, talk_seconds: 0, at });
        if (e.type === 'transfer') return this.#event({ type: 'call.transfer', call_id, stage: e.stage, at });
        if (e.type === 'bot') return this.#event({ type: 'bot.session', call_id, event: e.event, at, ...(e.reply_ms?.length ? { reply_ms: e.reply_ms } : {}) });
        this.#calls.delete(call_id);
        this.#event({
          type: 'call.ended',
          call_id,
          sip_status: e.sip_status,
          talk_seconds: e.talk_seconds,
          reason: e.reason,
          at,
          ...(e.bot_seconds !== undefined ? { bot_seconds: e.bot_seconds, transferred: e.transferred ?? false } : {}),
        });
        if (e.recording) this.#uploads.add(call_id, e.recording);
        this.#sendHeartbeat();
        if (this.#calls.size === 0) for (const w of this.#idleWaiters.splice(0)) w();
      },
    );
  }

  #event(e: CallEventMessage | BotSessionMessage | RecordingMessage): void {
    if (this.#welcomed) return this.#sendNow(e);
    if (this.#pending.length >= MAX_PENDING_EVENTS) this.#pending.shift();
    this.#pending.push(e);
  }

  #sendHeartbeat(): void {
    if (!this.#welcomed) return;
    this.#sendNow({
      type: 'heartbeat',
      live_calls: this.#calls.size,
      capacity: this.#o.capacity,
      draining: this.#draining !== null,
      ...(this.#draining ? { reason: this.#draining } : {}),
      ...this.#callIds(),
    });
  }

  /**
   * `call_ids` for a hello or heartbeat: the calls still up, and those whose end (or refusal) is
   * kept to be sent after the next welcome, so the control plane never takes a call whose end is
   * on its way for one the node lost. Too many to list (past MAX_REPORTED_CALLS or half a frame):
   * none, and the control plane ends nothing for being absent.
   */
  #callIds(): { call_ids?: string[] } {
    const ids = new Set(this.#calls);
    for (const e of this.#pending) if (e.type === 'call.ended' || e.type === 'call.refused') ids.add(e.call_id);
    if (ids.size > MAX_REPORTED_CALLS) return {};
    const list = [...ids];
    let bytes = 2;
    for (const id of list) bytes += Buffer.byteLength(id) + 3;
    return bytes > MAX_CALL_IDS_BYTES ? {} : { call_ids: list };
  }

  #sendNow(msg: AgentMessage): void {
    const ws = this.#ws;
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  }

  /**
   * The graceful stop (first SIGTERM): drains for shutdown (a resume cannot undo it), tells the
   * control plane, refuses new calls, waits for the live calls to end, then closes the socket.
   */
  async shutdown(): Promise<void> {
    this.#shuttingDown = true;
    this.#o.log('info', 'shutting down: draining', { live_calls: this.#calls.size });
    this.#sendHeartbeat();
    if (this.#calls.size > 0) await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    // Uploads under way get a while to finish (none after a second signal); what is left stays on
    // disk (a reconciliation gap) and is sent at the next start.
    await this.#uploads.stop(this.#hurried ? 0 : 10_000);
    await this.close();
  }

  /**
   * The hurried stop (a second SIGTERM): every call still up is hung up now (CANCEL while it
   * rings, BYE once answered: the trunk's `hangup`), and the graceful stop under way no longer
   * waits for uploads. Resolves once every call has ended (its `call.ended` sent or queued), or
   * after `waitMs`, with the number of calls still up.
   */
  async hangUpAll(waitMs: number): Promise<number> {
    this.#shuttingDown = true;
    this.#hurried = true;
    this.#o.log('warn', 'hanging up every call', { live_calls: this.#calls.size });
    this.#sendHeartbeat();
    for (const id of [...this.#calls]) this.#o.trunk.hangup(id);
    void this.#uploads.stop(0);
    if (this.#calls.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.#idleWaiters.push(resolve)),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, waitMs);
        }),
      ]);
      clearTimeout(timer);
    }
    return this.#calls.size;
  }

  /** Closes the socket (after what was queued is written) and stops reconnecting. */
  async close(): Promise<void> {
    this.#stopped = true;
    await this.#uploads.stop(0);
    if (this.#reconnect) clearTimeout(this.#reconnect);
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    const ws = this.#ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2_000);
      ws.once('close', () => {
        clearTimeout(t);
        resolve();
      });
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else ws.close(1000, 'shutdown');
    });
  }
}
