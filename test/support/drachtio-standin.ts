/**
 * A stand-in for drachtio-server on loopback, for tests of the media agent's drachtio trunk with
 * the real drachtio-srf client. The admin protocol is written from drachtio-srf 5.0.29's source
 * (node_modules/drachtio-srf/lib/wire-protocol.js, drachtio-agent.js, srf.js, dialog.js,
 * request.js); what the server does with calls when only an app's admin connection drops, from
 * drachtio-server's (src/client-controller.cpp, src/client.cpp, src/sip-dialog-controller.cpp,
 * src/invite-in-progress.cpp) and sofia-sip's nta.c. What only a real drachtio-server shows is in
 * docs/trunks.md.
 *
 * The admin protocol, as the client speaks it:
 * - framing: `<byte length>#<msgId>|<type>|…` both ways (wire-protocol.js `send` and `_onData`).
 * - the client's first frame: `authenticate|<secret>|<tags>`; the answer is
 *   `<id>|response|<its msgId>|OK|<hostport>|<server version>` (drachtio-agent.js `_onConnect`).
 *   A wrong secret here gets `NOK|…` and the socket is closed (the client then reconnects with
 *   its backoff, and is refused again).
 * - a request the app sends: `sip|<stackTxnId>|<stackDialogId>\r\n<SIP message>` (an INVITE has
 *   neither, a CANCEL the INVITE's transaction id, ACK, BYE and OPTIONS the dialog id). The server
 *   answers `response|<msgId>|OK|application|<len>|udp|<addr>|<port>|<time>|<txnId>|<dialogId>\r\n
 *   <the request as sent>` (drachtio-agent.js `_makeRequest`), or `NOK|<reason>`; later SIP
 *   responses to it arrive as `sip|network|<len>|udp|<addr>|<port>|<time>|<txnId>|<dialogId>\r\n
 *   <SIP response>`.
 * - a response the app sends (`sendResponse`) is the same `sip|…` frame.
 * - a request from the far end (a BYE) arrives as `sip|network|…|<txnId>|<dialogId>\r\n<request>`
 *   and the app answers it with a `sip|<txnId>|…` response frame.
 * - the 200 to a CANCEL is not passed to the app (drachtio-agent.js: "sofia … does not pass up
 *   the 200 OK response to a CANCEL"): the stand-in records it, the app sees only the 487.
 *
 * This file is the server's admin side: listening, admin connections and their frames,
 * authentication, a cut or held connection, the server going down, and the events it records.
 * The calls (the far end, the server's transactions and dialogs, and what the server does with
 * them once an app's connection is gone) are in `drachtio-standin-calls.ts`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { CRLF, FAR_HOST, FAR_PORT, render, type Sip } from './sip-text.ts';
import { StandinCalls, type CallState, type FarEnd, type StandinEvent } from './drachtio-standin-calls.ts';
import { loadScale } from './eventually.ts';

export type { FarEnd, StandinEvent } from './drachtio-standin-calls.ts';

export type StandinOptions = {
  secret: string;
  /** The far end's behaviour for an INVITE to this user part (the E.164 number). Default: ring. */
  farEnd?: (user: string) => FarEnd;
  /** SIP timer T1 (default 500 ms): the 200's retransmissions and the 64×T1 limits scale with it. */
  t1Ms?: number;
};

export class DrachtioStandin {
  readonly events: StandinEvent[] = [];
  readonly #secret: string;
  readonly #sockets = new Set<Socket>();
  readonly #calls: StandinCalls;
  #server: Server | null = null;
  #port = 0;
  #held: Array<() => void> | null = null;
  #waiters: Array<() => void> = [];

  private constructor(opts: StandinOptions) {
    this.#secret = opts.secret;
    this.#calls = new StandinCalls(opts.t1Ms ?? 500, opts.farEnd ?? (() => ({ kind: 'ring' })), {
      note: (e) => this.#note(e),
      count: (kind) => this.count(kind),
      refuse: (socket, msgId, method, reason) => this.#refuse(socket, msgId, method, reason),
      sent: (socket, msgId, msg, txnId, dialogId) => this.#sent(socket, msgId, msg, txnId, dialogId),
      sendSip: (socket, msg, txnId, dialogId) => this.#sendSip(socket, msg, txnId, dialogId),
      respond: (socket, msgId, fields) => this.#respond(socket, msgId, fields),
    });
  }

  /** Starts listening on 127.0.0.1 (a free port unless one is given). */
  static async start(opts: StandinOptions, port = 0): Promise<DrachtioStandin> {
    const s = new DrachtioStandin(opts);
    await s.up(port);
    return s;
  }

  get port(): number {
    return this.#port;
  }

  set farEnd(fn: (user: string) => FarEnd) {
    this.#calls.farEnd = fn;
  }

  /** Listens (again) on the same port: the "server is back" of a reconnect test. */
  async up(port = this.#port): Promise<void> {
    if (this.#server) return;
    const server = createServer((socket) => this.#onSocket(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.#server = server;
    this.#port = (server.address() as { port: number }).port;
  }

  /** Drops every admin socket and nothing else (a network cut, `ss -K`): the server keeps its calls. */
  dropConnections(): void {
    const n = this.#sockets.size;
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    this.#note({ kind: 'dropped', sockets: n });
  }

  /**
   * Until `release()`, new admin connections are accepted but not answered (a server or path that
   * hangs): an app cannot authenticate, and is not refused either.
   */
  hold(): void {
    this.#held ??= [];
  }

  release(): void {
    const held = this.#held ?? [];
    this.#held = null;
    for (const f of held) f();
  }

  /** The server process is gone: it stops listening, drops every admin socket and forgets its calls. */
  async down(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    this.dropConnections();
    this.#calls.forget();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async close(): Promise<void> {
    this.#calls.stopTimers();
    this.#held = null;
    await this.down();
  }

  get connections(): number {
    return this.#sockets.size;
  }

  /** The SIP Call-ID of the call placed to this user part (the latest one). */
  callIdFor(user: string): string | null {
    return this.#calls.callIdFor(user);
  }

  /** The far end's state of the call. */
  callState(callId: string): CallState | null {
    return this.#calls.callState(callId);
  }

  /** Whether the server still has the call's dialog. */
  hasDialog(callId: string): boolean {
    return this.#calls.hasDialog(callId);
  }

  /** The far end's host goes away without a word: the server's stack answers its own 503 to what is sent to it. */
  farEndUnreachable(callId: string): void {
    this.#calls.farEndUnreachable(callId);
  }

  /** The far end hangs up an answered call: a BYE in the call's dialog. */
  farEndBye(callId: string): void {
    this.#calls.farEndBye(callId);
  }

  /**
   * Resolves once an event matches (checked against those already seen, then each new one). Woken
   * by the event itself, not by polling (`eventually`): scenarios act in the same turn as the
   * event, before the next frame is read (an ACK not read yet when the connection is held).
   */
  async waitFor<E extends StandinEvent['kind']>(kind: E, match: (e: Extract<StandinEvent, { kind: E }>) => boolean = () => true, timeoutMs = 10_000): Promise<Extract<StandinEvent, { kind: E }>> {
    const find = () => this.events.find((e): e is Extract<StandinEvent, { kind: E }> => e.kind === kind && match(e as Extract<StandinEvent, { kind: E }>));
    const deadline = Date.now() + timeoutMs * loadScale(); // a hang guard, stretched on a busy machine as `eventually`'s
    for (;;) {
      const hit = find();
      if (hit) return hit;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`stand-in: no ${kind} event within ${timeoutMs} ms; seen: ${JSON.stringify(this.events.map((e) => e.kind))}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  count<E extends StandinEvent['kind']>(kind: E, match: (e: Extract<StandinEvent, { kind: E }>) => boolean = () => true): number {
    return this.events.filter((e) => e.kind === kind && match(e as Extract<StandinEvent, { kind: E }>)).length;
  }

  #note(e: StandinEvent): void {
    this.events.push(e);
    for (const w of this.#waiters.splice(0)) w();
  }

  // ---- the admin connection ----

  #onSocket(socket: Socket): void {
    this.#sockets.add(socket);
    this.#note({ kind: 'connection' });
    let buf = Buffer.alloc(0);
    let authenticated = false;
    socket.on('error', () => {});
    socket.on('close', () => this.#sockets.delete(socket));
    const read = () => {
      for (;;) {
        const hash = buf.indexOf('#');
        if (hash <= 0) return;
        const len = Number(buf.toString('utf8', 0, hash));
        if (!Number.isInteger(len) || len <= 0) {
          socket.destroy();
          return;
        }
        if (buf.length < hash + 1 + len) return;
        const frame = buf.toString('utf8', hash + 1, hash + 1 + len);
        buf = buf.subarray(hash + 1 + len);
        const nl = frame.indexOf(CRLF);
        const leader = nl === -1 ? frame : frame.slice(0, nl);
        const body = nl === -1 ? '' : frame.slice(nl + 2);
        const token = leader.split('|');
        const msgId = token[0]!;
        const type = token[1];
        if (!authenticated) {
          if (type !== 'authenticate') return void socket.destroy();
          if (token[2] === this.#secret) {
            authenticated = true;
            this.#note({ kind: 'authenticated', tags: token[3] ?? '' });
            this.#respond(socket, msgId, ['OK', '127.0.0.1:5060', 'v0.9.3-standin']);
          } else {
            this.#note({ kind: 'auth_refused' });
            this.#respond(socket, msgId, ['NOK', 'incorrect secret']);
            socket.end();
          }
          continue;
        }
        if (type === 'sip') this.#calls.onAppSip(socket, msgId, token[2] ?? '', token[3] ?? '', body);
        // route, remove_route, ping and the rest: acknowledged, nothing else to do here.
        else this.#respond(socket, msgId, ['OK']);
      }
    };
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      if (this.#held) this.#held.push(read);
      else read();
    });
  }

  #write(socket: Socket, s: string): void {
    if (socket.destroyed) return;
    socket.write(`${Buffer.byteLength(s, 'utf8')}#${s}`);
  }

  #respond(socket: Socket, msgId: string, fields: string[], raw?: string): void {
    this.#write(socket, `${randomUUID()}|response|${msgId}|${fields.join('|')}${raw === undefined ? '' : CRLF + raw}`);
  }

  #refuse(socket: Socket, msgId: string, method: string, reason: string): void {
    this.#note({ kind: 'refused', method, reason });
    this.#respond(socket, msgId, ['NOK', reason]);
  }

  /** OK for a request the app sent, echoing it as it went out (with the transaction it opened). */
  #sent(socket: Socket, msgId: string, msg: Sip, txnId: string, dialogId: string): void {
    const raw = render(msg);
    this.#respond(socket, msgId, ['OK', 'application', String(Buffer.byteLength(raw)), 'udp', FAR_HOST, FAR_PORT, String(Date.now()), txnId, dialogId], raw);
  }

  /** A SIP message from the network to the app. */
  #sendSip(socket: Socket, msg: Sip, txnId: string, dialogId: string): void {
    const raw = render(msg);
    this.#write(socket, `${randomUUID()}|sip|network|${Buffer.byteLength(raw)}|udp|${FAR_HOST}|${FAR_PORT}|${Date.now()}|${txnId}|${dialogId}${CRLF}${raw}`);
  }
}
