/**
 * The control plane's end of the media agent protocol (`docs/agent-protocol.md`): a `ws`
 * WebSocketServer without a server of its own, fed by the HTTP server's 'upgrade' event for
 * `/agent/v1`. It checks the bearer token, gives each connection a new, higher epoch, keeps the
 * registry of nodes (one node = one socket; a new hello for a node replaces its old socket), sends
 * commands, and emits the agents' call events for the dialer.
 *
 * Events: 'call' (CallEvent), 'bot.session' (BotSessionReport), 'node.online' (NodeView),
 * 'node.offline' (NodeView), 'node.updated' (NodeView), 'recording' (RecordingReport).
 */
import { EventEmitter } from 'node:events';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket } from 'ws';
import {
  AGENT_PROTOCOL_PATH,
  MAX_FRAME_BYTES,
  OFFLINE_AFTER_MS,
  parseAgentMessage,
  type BotSessionMessage,
  type CallEventMessage,
  type ControlCommand,
  type ControlMessage,
  type RecordingMessage,
  type DrainReason,
  type OriginateCall,
} from '../../shared/agent-protocol.ts';
import type { Logger } from '../../shared/logger.ts';

/** A node as the registry shows it. */
export type NodeView = {
  node_id: string;
  capacity: number;
  live_calls: number;
  draining: boolean;
  drain_reason: DrainReason | null;
  version: string;
  region: string;
  /** The epoch of the node's current (or last) connection. */
  epoch: number;
  online: boolean;
  connected_at: Date;
  last_heartbeat_at: Date;
  /** When the agent's process started, as its hello said (older agents do not say). */
  started_at: Date | null;
};

/** A bot session's report from an agent, with the node it came from. */
export type BotSessionReport = { node_id: string; message: BotSessionMessage };

/** A recording report from an agent (`recording.waiting_upload`, `recording.failed`), with its node. */
export type RecordingReport = { node_id: string; message: RecordingMessage };

/**
 * Why an originate never reached its node although the dialer handed it over (the control plane's
 * own refusals, never an agent's): a command forwarded from another instance that came past its
 * deadline (`command_late`), or found the node's socket no longer here (`not_connected`).
 */
export type UnsentReason = 'command_late' | 'not_connected';

/** A call event from an agent, with the node and connection it came on (or one of `notSent`). */
export type CallEvent = {
  node_id: string;
  epoch: number;
  event: CallEventMessage | { type: 'call.refused'; call_id: string; reason: UnsentReason };
};

/**
 * What a node last said it still has (`call_ids` of its latest hello or heartbeat), for ending the
 * calls it no longer has (dialer/launch-rows.ts `findCallsOffNodes`). `heard`: the calls whose
 * events came after that report: the report may predate them, so it says nothing about them.
 */
export type CallReport = { node_id: string; epoch: number; call_ids: string[]; heard: string[]; age_ms: number };

export type CommandResult = { ok: true; epoch: number } | { ok: false; reason: 'offline' | 'unknown_node' | 'shutting_down' };

export type AgentHubOptions = {
  token: string;
  logger?: Logger;
  /** Silence after which a node is offline (the protocol's 5 s; tests do not change it). */
  offlineAfterMs?: number;
  /** Time a new connection has to say hello. */
  helloTimeoutMs?: number;
};

type Report = { callIds: Set<string>; at: number; heard: Set<string> };
/**
 * `awaiting`: a drain or resume sent to the agent and not yet seen in its heartbeats. A heartbeat
 * the agent sent before it read the command (one was on the wire) is older than the command: its
 * drain state is not taken, or the node would flap back to accepting (or draining) until the next
 * one (seen with an operator's drain sent to a node that had just connected again).
 */
type Entry = NodeView & { socket: WebSocket | null; lastSeen: number; report: Report | null; awaiting: 'drain' | 'resume' | null };

const CLOSE_REPLACED = 4000;
const CLOSE_PROTOCOL = 1008;
const CLOSE_OFFLINE = 4001;

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export class AgentHub extends EventEmitter {
  readonly #wss: WebSocketServer;
  readonly #tokenDigest: Buffer;
  readonly #log: Logger | undefined;
  readonly #offlineAfterMs: number;
  readonly #helloTimeoutMs: number;
  readonly #nodes = new Map<string, Entry>();
  readonly #sweep: NodeJS.Timeout;
  #lastSweep = Date.now();
  #lastEpoch = 0;
  #servers: Array<{ server: Server; listener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void }> = [];
  #closed = false;

  constructor(opts: AgentHubOptions) {
    super();
    this.#tokenDigest = digest(opts.token);
    this.#log = opts.logger?.child({ part: 'agent-hub' });
    this.#offlineAfterMs = opts.offlineAfterMs ?? OFFLINE_AFTER_MS;
    this.#helloTimeoutMs = opts.helloTimeoutMs ?? OFFLINE_AFTER_MS;
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, clientTracking: true });
    this.#wss.on('connection', (ws: WebSocket) => this.#onConnection(ws));
    this.#sweep = setInterval(() => this.#checkSilence(), Math.min(500, this.#offlineAfterMs / 4));
    this.#sweep.unref();
  }

  /** Handles WebSocket upgrades for `/agent/v1` on `server`. */
  attach(server: Server): void {
    const listener = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== AGENT_PROTOCOL_PATH) {
        // Another path: leave it to another upgrade handler, or refuse it when there is none.
        if (server.listeners('upgrade').length <= 1) reject(socket, 404, 'Not Found');
        return;
      }
      if (this.#closed) return reject(socket, 503, 'Service Unavailable');
      if (!this.authorized(req.headers.authorization)) {
        this.#log?.warn({ remote: req.socket.remoteAddress }, 'agent refused: bad or missing bearer token');
        return reject(socket, 401, 'Unauthorized', { 'WWW-Authenticate': 'Bearer' });
      }
      this.#wss.handleUpgrade(req, socket, head, (ws) => this.#wss.emit('connection', ws, req));
    };
    server.on('upgrade', listener);
    this.#servers.push({ server, listener });
  }

  /** Whether an Authorization header carries the agents' bearer token (the socket, and recording uploads). */
  authorized(header: string | undefined): boolean {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!m) return false;
    return timingSafeEqual(digest(m[1]), this.#tokenDigest);
  }

  /** A new epoch, higher than any before in this process (wall-clock based, so across restarts too). */
  #nextEpoch(): number {
    this.#lastEpoch = Math.max(this.#lastEpoch + 1, Date.now());
    return this.#lastEpoch;
  }

  #onConnection(ws: WebSocket): void {
    let entry: Entry | null = null;
    const helloTimer = setTimeout(() => {
      if (!entry) ws.close(CLOSE_PROTOCOL, 'no hello');
    }, this.#helloTimeoutMs);
    ws.on('error', (err) => this.#log?.warn({ err: err.message }, 'agent socket error'));
    ws.on('message', (data, isBinary) => {
      if (isBinary) return ws.close(CLOSE_PROTOCOL, 'binary frames are not part of the protocol');
      const parsed = parseAgentMessage(data as Buffer);
      if (!parsed.ok) {
        this.#log?.warn({ node: entry?.node_id, error: parsed.error }, 'agent frame refused');
        return ws.close(CLOSE_PROTOCOL, parsed.error.slice(0, 120));
      }
      const msg = parsed.message;
      if (msg.type === 'hello') {
        if (entry) return ws.close(CLOSE_PROTOCOL, 'hello twice');
        clearTimeout(helloTimer);
        entry = this.#register(ws, msg);
        return;
      }
      if (!entry) return ws.close(CLOSE_PROTOCOL, 'hello first');
      if (msg.type === 'recording.waiting_upload' || msg.type === 'recording.failed') {
        // Facts about a call's file, whichever of the node's connections brought them.
        this.emit('recording', { node_id: entry.node_id, message: msg } satisfies RecordingReport);
        return;
      }
      if (entry.socket !== ws) {
        // A connection its node has replaced, or that was closed as silent: what it says of the
        // node is stale, but its call events are facts the agent will not send again (it sent them
        // before it saw the close). They are taken; their writes are guarded by the call's state.
        if (msg.type === 'bot.session') this.emit('bot.session', { node_id: entry.node_id, message: msg } satisfies BotSessionReport);
        else if (msg.type !== 'heartbeat') {
          this.#nodes.get(entry.node_id)?.report?.heard.add(msg.call_id);
          this.emit('call', { node_id: entry.node_id, epoch: entry.epoch, event: msg } satisfies CallEvent);
        }
        return;
      }
      entry.lastSeen = Date.now();
      if (msg.type === 'heartbeat') {
        const wasOnline = entry.online;
        entry.live_calls = msg.live_calls;
        entry.capacity = msg.capacity;
        const older = entry.awaiting === 'drain' ? !msg.draining : entry.awaiting === 'resume' ? msg.draining && (msg.reason ?? 'operator') === 'operator' : false;
        if (!older) {
          entry.awaiting = null;
          entry.draining = msg.draining;
          entry.drain_reason = msg.draining ? (msg.reason ?? entry.drain_reason ?? 'operator') : null;
        }
        entry.last_heartbeat_at = new Date();
        entry.online = true;
        entry.report = reportOf(msg.call_ids);
        this.emit(wasOnline ? 'node.updated' : 'node.online', view(entry));
        return;
      }
      if (msg.type === 'bot.session') {
        this.emit('bot.session', { node_id: entry.node_id, message: msg } satisfies BotSessionReport);
        return;
      }
      entry.report?.heard.add(msg.call_id);
      this.emit('call', { node_id: entry.node_id, epoch: entry.epoch, event: msg } satisfies CallEvent);
    });
    ws.on('close', () => {
      clearTimeout(helloTimer);
      if (entry && entry.socket === ws) this.#markOffline(entry, 'socket closed');
    });
  }

  #register(ws: WebSocket, hello: { node_id: string; capacity: number; version: string; region: string; draining?: boolean; reason?: DrainReason; call_ids?: string[]; started_at?: string }): Entry {
    const old = this.#nodes.get(hello.node_id);
    if (old?.socket && old.socket !== ws) {
      const previous = old.socket;
      old.socket = null; // detached first, so its close does not mark the new connection offline
      previous.close(CLOSE_REPLACED, 'replaced by a new connection');
    }
    const now = new Date();
    const entry: Entry = {
      node_id: hello.node_id,
      capacity: hello.capacity,
      live_calls: old?.live_calls ?? 0,
      draining: hello.draining ?? false,
      drain_reason: hello.draining ? (hello.reason ?? 'operator') : null,
      version: hello.version,
      region: hello.region,
      epoch: this.#nextEpoch(),
      online: true,
      connected_at: now,
      last_heartbeat_at: now,
      started_at: hello.started_at ? new Date(hello.started_at) : null,
      socket: ws,
      awaiting: null,
      lastSeen: now.getTime(),
      report: reportOf(hello.call_ids),
    };
    this.#nodes.set(hello.node_id, entry);
    this.#send(ws, { type: 'welcome', epoch: entry.epoch });
    this.#log?.info({ node: entry.node_id, epoch: entry.epoch, capacity: entry.capacity }, 'media node registered');
    this.emit('node.online', view(entry));
    return entry;
  }

  #markOffline(entry: Entry, why: string): void {
    const socket = entry.socket;
    entry.socket = null;
    entry.report = null;
    if (socket && socket.readyState === WebSocket.OPEN) socket.close(CLOSE_OFFLINE, why);
    if (!entry.online) return;
    entry.online = false;
    this.#log?.warn({ node: entry.node_id, epoch: entry.epoch, why }, 'media node offline');
    this.emit('node.offline', view(entry));
  }

  #checkSilence(): void {
    const now = Date.now();
    const gap = now - this.#lastSweep;
    this.#lastSweep = now;
    if (gap > this.#offlineAfterMs / 2) {
      // This process itself did not run for a while (SIGSTOP, a stalled event loop): the nodes'
      // frames of that time wait unread in their sockets, and timers run before they are read.
      // Their silence counts again from now, so a live node is not cut off (and its call events
      // with it) for a pause of ours; a dead one is still found one offline period later.
      for (const entry of this.#nodes.values()) if (entry.online) entry.lastSeen = Math.max(entry.lastSeen, now);
      return;
    }
    for (const entry of this.#nodes.values()) {
      if (entry.online && now - entry.lastSeen > this.#offlineAfterMs) this.#markOffline(entry, `silent for ${this.#offlineAfterMs} ms`);
    }
  }

  #send(ws: WebSocket, msg: ControlMessage): void {
    ws.send(JSON.stringify(msg));
  }

  /** The registry, one row per node ever seen by this instance. */
  nodes(): NodeView[] {
    return [...this.#nodes.values()].map(view);
  }

  node(nodeId: string): NodeView | null {
    const e = this.#nodes.get(nodeId);
    return e ? view(e) : null;
  }

  /**
   * Measures a node's answer time: a WebSocket ping on its socket and the milliseconds until its
   * pong (the agent's WebSocket library answers pings itself, so this is the round trip to the
   * agent's process). Null when the node has no open socket here or no pong came within `timeoutMs`.
   */
  ping(nodeId: string, timeoutMs: number): Promise<number | null> {
    const ws = this.#nodes.get(nodeId)?.socket;
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.resolve(null);
    return new Promise((resolve) => {
      const started = performance.now();
      const done = (ms: number | null) => {
        clearTimeout(timer);
        ws.off('pong', onPong);
        ws.off('close', onClose);
        resolve(ms);
      };
      const onPong = () => done(Math.round((performance.now() - started) * 10) / 10);
      const onClose = () => done(null);
      const timer = setTimeout(() => done(null), timeoutMs);
      ws.on('pong', onPong);
      ws.once('close', onClose);
      ws.ping();
    });
  }

  /** The latest `call_ids` report of each node online on this hub (nodes that send none are left out). */
  callReports(): CallReport[] {
    const now = Date.now();
    const out: CallReport[] = [];
    for (const e of this.#nodes.values()) {
      if (!e.online || !e.socket || !e.report) continue;
      out.push({ node_id: e.node_id, epoch: e.epoch, call_ids: [...e.report.callIds], heard: [...e.report.heard], age_ms: now - e.report.at });
    }
    return out;
  }

  /**
   * Sends a command as is (its epoch included). The methods below stamp the node's current epoch;
   * this one exists for tests of the epoch rule and for the node actor's replays.
   */
  sendCommand(nodeId: string, cmd: ControlCommand): CommandResult {
    const e = this.#nodes.get(nodeId);
    if (!e) return { ok: false, reason: 'unknown_node' };
    if (!e.online || !e.socket || e.socket.readyState !== WebSocket.OPEN) return { ok: false, reason: 'offline' };
    this.#send(e.socket, cmd);
    return { ok: true, epoch: e.epoch };
  }

  #epochOf(nodeId: string): number {
    return this.#nodes.get(nodeId)?.epoch ?? 0;
  }

  /**
   * Asks the node to place a call. The agent has the last word: it answers `call.refused` when it
   * drains or is full. Choosing a node with room is the dialer's job.
   */
  originate(nodeId: string, call: OriginateCall): CommandResult {
    return this.sendCommand(nodeId, { type: 'originate', epoch: this.#epochOf(nodeId), ...call });
  }

  /**
   * An originate this instance was given for the node and did not send: its call ends as refused
   * through the same 'call' event as an agent's own `call.refused` (no attempt spent, the row not
   * left `dialing` for the one-minute sweep).
   */
  notSent(nodeId: string, callId: string, reason: UnsentReason): void {
    this.emit('call', { node_id: nodeId, epoch: this.#epochOf(nodeId), event: { type: 'call.refused', call_id: callId, reason } } satisfies CallEvent);
  }

  hangup(nodeId: string, callId: string): CommandResult {
    return this.sendCommand(nodeId, { type: 'hangup', epoch: this.#epochOf(nodeId), call_id: callId });
  }

  /** The operator's drain: the node takes no new calls; live calls end normally. */
  drain(nodeId: string): CommandResult {
    const r = this.sendCommand(nodeId, { type: 'drain', epoch: this.#epochOf(nodeId) });
    const e = this.#nodes.get(nodeId);
    if (r.ok && e) e.awaiting = 'drain';
    if (r.ok && e && (!e.draining || e.drain_reason === 'trunk_down')) {
      e.draining = true;
      e.drain_reason = 'operator';
      this.emit('node.updated', view(e));
    }
    return r;
  }

  /** Undoes an operator's drain; refused for a node that drains because its process shuts down. */
  resume(nodeId: string): CommandResult {
    const e = this.#nodes.get(nodeId);
    if (!e) return { ok: false, reason: 'unknown_node' };
    if (e.draining && e.drain_reason === 'shutdown') return { ok: false, reason: 'shutting_down' };
    const r = this.sendCommand(nodeId, { type: 'resume', epoch: e.epoch });
    if (r.ok) e.awaiting = 'resume';
    // Only an operator's drain is lifted here; a node draining for its trunk says when it is back.
    if (r.ok && e.draining && e.drain_reason === 'operator') {
      e.draining = false;
      e.drain_reason = null;
      this.emit('node.updated', view(e));
    }
    return r;
  }

  /** Closes the node's socket from this side (the agent reconnects and gets a new epoch). */
  disconnect(nodeId: string): boolean {
    const e = this.#nodes.get(nodeId);
    if (!e?.socket) return false;
    this.#markOffline(e, 'closed by the control plane');
    return true;
  }

  /** Stops accepting agents and closes every agent socket. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweep);
    for (const { server, listener } of this.#servers) server.off('upgrade', listener);
    for (const e of this.#nodes.values()) this.#markOffline(e, 'control plane closing');
    for (const ws of this.#wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}

function view(e: Entry): NodeView {
  return {
    node_id: e.node_id,
    capacity: e.capacity,
    live_calls: e.live_calls,
    draining: e.draining,
    drain_reason: e.drain_reason,
    version: e.version,
    region: e.region,
    epoch: e.epoch,
    online: e.online,
    connected_at: e.connected_at,
    last_heartbeat_at: e.last_heartbeat_at,
    started_at: e.started_at,
  };
}

function reportOf(callIds: string[] | undefined): Report | null {
  return callIds ? { callIds: new Set(callIds), at: Date.now(), heard: new Set() } : null;
}

function reject(socket: Duplex, status: number, text: string, headers: Record<string, string> = {}): void {
  const lines = [`HTTP/1.1 ${status} ${text}`, 'Connection: close', 'Content-Length: 0', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  socket.end(`${lines.join('\r\n')}\r\n\r\n`);
}

