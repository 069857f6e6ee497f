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
 * The server keeps its calls when an app's admin connection drops (`dropConnections`), as
 * drachtio-server does: an INVITE's responses go only to the connection that sent it, and a
 * dialog's requests only to the connection that owned it, so once that connection is gone:
 * - a 200 is passed to nobody and not ACKed: the far end retransmits it (T1, 2T1 … up to T2) and,
 *   after 64×T1 without an ACK, sends a BYE (RFC 3261 13.3.1.4);
 * - the far end's BYE is answered 481 by the server, which drops the dialog;
 * - any connection may still send, by id: an ACK for a 200 not yet ACKed (refused when there is
 *   no answered dialog), a BYE or OPTIONS in a dialog the server still has (refused "unable to
 *   find dialog" otherwise), a CANCEL of an INVITE still pending (refused "unknown transaction"
 *   once a final response other than 200 came, the 200 was ACKed or 64×T1 passed after a CANCEL;
 *   refused without a word on the wire when it was cancelled already or a 200 came);
 * - a 200 that came after a CANCEL is BYEd by the server itself once the app ACKs it (its
 *   "ACK-BYE"; the copy of that BYE the real server also reports to the owning app is left out).
 * `down()` is the server process gone: it forgets every call (a new one has none of them).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { answerSdp, CRLF, FAR_HOST, FAR_PORT, headerOf, parse, render, reply, sip, type Sip } from './sip-text.ts';
import { loadScale } from './eventually.ts';

/** What the far end does with an INVITE. */
export type FarEnd =
  /** 180, then nothing until a CANCEL (then 200 to the CANCEL and 487 to the INVITE). */
  | { kind: 'ring' }
  /** 180, then 200 after `afterMs` (default 20 ms); the dialog lives until a BYE. */
  | { kind: 'answer'; afterMs?: number }
  /** 180, then this final status after `afterMs` (default 20 ms). */
  | { kind: 'reject'; status: number; afterMs?: number }
  /** 180, then nothing; a CANCEL crosses a 200 it had already sent (200 to the CANCEL, no 487). */
  | { kind: 'answer-on-cancel' };

export type StandinEvent =
  | { kind: 'connection' }
  | { kind: 'authenticated'; tags: string }
  | { kind: 'auth_refused' }
  | { kind: 'invite'; callId: string; user: string; headers: Record<string, string> }
  /** A response of the far end to the INVITE; `passed`: given to the app that sent it (false: that connection is gone). */
  | { kind: 'response_sent'; callId: string; status: number; method: string; passed: boolean }
  /** The far end sent its 200 again (no ACK yet); `count` so far. */
  | { kind: 'retransmit'; callId: string; status: 200; count: number }
  /** A CANCEL the server took (`answered`: the far end's 200 to it) or refused (nothing on the wire). */
  | { kind: 'cancel'; callId: string; answered: 200 | null; outcome: '487' | 'crossed_200' | 'refused' }
  | { kind: 'ack'; callId: string; from: 'app' }
  | { kind: 'bye'; callId: string; from: 'app' | 'far_end' | 'server' }
  | { kind: 'bye_answered'; callId: string; by: 'app' | 'far_end' | 'server'; status: number }
  | { kind: 'options'; callId: string; status: number }
  /** A request of the app the server refused (NOK) with this reason. */
  | { kind: 'refused'; method: string; reason: string }
  | { kind: 'dropped'; sockets: number };

type Call = {
  callId: string;
  user: string;
  fromTag: string;
  toTag: string;
  inviteTxn: string;
  dialogId: string;
  invite: Sip;
  /** The admin connection that sent the INVITE: the INVITE's responses and the dialog's requests go to it and no other. */
  owner: Socket;
  /** The far end's side: `answered` after its 200 until the ACK. */
  state: 'ringing' | 'answered' | 'confirmed' | 'ended';
  /** The server still has the call (false once `down()` forgot it). */
  known: boolean;
  /** The far end cannot be reached: requests to it get the 503 sofia makes on a transport error. */
  unreachable: boolean;
  /** The server's INVITE client transaction is open (drachtio-server's "IIP"). */
  inviteOpen: boolean;
  /** A CANCEL was taken for the INVITE; `ackBye`: the 200 came after it, so the server BYEs on the ACK. */
  canceled: boolean;
  ackBye: boolean;
  farEnd: FarEnd;
  timer: NodeJS.Timeout | null;
  retransmit: NodeJS.Timeout | null;
  cancelTimer: NodeJS.Timeout | null;
  byeTxn: string | null;
};

const NO_DIALOG = 'Server error: unable to find dialog for dialog id provided';
const NO_ACK = 'Server error: ACK for non-success final response is automatically generated by server';

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
  readonly #t1: number;
  #farEnd: (user: string) => FarEnd;
  readonly #sockets = new Set<Socket>();
  readonly #calls = new Map<string, Call>();
  /** The server's dialogs (from a 200 until a BYE either way). */
  readonly #byDialog = new Map<string, Call>();
  #server: Server | null = null;
  #port = 0;
  #held: Array<() => void> | null = null;
  #waiters: Array<() => void> = [];

  private constructor(opts: StandinOptions) {
    this.#secret = opts.secret;
    this.#t1 = opts.t1Ms ?? 500;
    this.#farEnd = opts.farEnd ?? (() => ({ kind: 'ring' }));
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
    this.#farEnd = fn;
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
    for (const c of this.#calls.values()) {
      c.known = false;
      c.inviteOpen = false;
      if (c.cancelTimer) clearTimeout(c.cancelTimer);
    }
    this.#byDialog.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async close(): Promise<void> {
    for (const c of this.#calls.values()) for (const t of [c.timer, c.retransmit, c.cancelTimer]) if (t) clearTimeout(t);
    this.#held = null;
    await this.down();
  }

  get connections(): number {
    return this.#sockets.size;
  }

  /** The SIP Call-ID of the call placed to this user part (the latest one). */
  callIdFor(user: string): string | null {
    let found: string | null = null;
    for (const c of this.#calls.values()) if (c.user === user) found = c.callId;
    return found;
  }

  /** The far end's state of the call. */
  callState(callId: string): Call['state'] | null {
    return this.#calls.get(callId)?.state ?? null;
  }

  /** Whether the server still has the call's dialog. */
  hasDialog(callId: string): boolean {
    const c = this.#calls.get(callId);
    return !!c && this.#byDialog.get(c.dialogId) === c;
  }

  /** The far end's host goes away without a word: the server's stack answers its own 503 to what is sent to it. */
  farEndUnreachable(callId: string): void {
    const c = this.#calls.get(callId);
    if (!c) throw new Error(`no call ${callId}`);
    c.unreachable = true;
  }

  /** The far end hangs up an answered call: a BYE in the call's dialog. */
  farEndBye(callId: string): void {
    const c = this.#calls.get(callId);
    if (!c || (c.state !== 'confirmed' && c.state !== 'answered')) throw new Error(`no answered call ${callId}`);
    c.state = 'ended';
    if (c.retransmit) clearTimeout(c.retransmit);
    this.#note({ kind: 'bye', callId, from: 'far_end' });
    if (this.#byDialog.get(c.dialogId) !== c) return this.#note({ kind: 'bye_answered', callId, by: 'server', status: 481 });
    // The server forgets the dialog once the BYE came in: a BYE the app sends now (crossing this
    // one) is refused "unable to find dialog" (drachtio-agent.js: ENODIALOG).
    this.#byDialog.delete(c.dialogId);
    c.inviteOpen = false;
    if (c.owner.destroyed) {
      // "unable to find client for dialog": nobody to pass it to, 481 to the far end.
      return this.#note({ kind: 'bye_answered', callId, by: 'server', status: 481 });
    }
    c.byeTxn = randomUUID();
    this.#sendSip(c.owner, this.#farBye(c), c.byeTxn, c.dialogId);
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
        if (type === 'sip') this.#onAppSip(socket, msgId, token[2] ?? '', token[3] ?? '', body);
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

  #onAppSip(socket: Socket, msgId: string, txnId: string, dialogId: string, raw: string): void {
    const msg = parse(raw);
    const [first] = msg.startLine.split(' ');
    if (first === 'SIP/2.0') return this.#onAppResponse(socket, msgId, txnId, msg);
    const method = first!;
    if (method === 'INVITE' && !txnId && !dialogId) return this.#onInvite(socket, msgId, msg);
    if (method === 'CANCEL') return this.#onCancel(socket, msgId, txnId, msg);
    const call = this.#byDialog.get(dialogId);
    if (method === 'ACK') return this.#onAck(socket, msgId, call, dialogId);
    if (!call) return this.#refuse(socket, msgId, method, NO_DIALOG);
    if (method === 'BYE' || method === 'OPTIONS') return this.#inDialog(socket, msgId, call, method);
    this.#refuse(socket, msgId, method, `stand-in does not handle ${method}`);
  }

  #onAck(socket: Socket, msgId: string, call: Call | undefined, dialogId: string): void {
    if (!call) return this.#refuse(socket, msgId, 'ACK', NO_ACK);
    this.#sent(socket, msgId, this.#request(call, 'ACK', '1 ACK'), randomUUID(), dialogId);
    this.#note({ kind: 'ack', callId: call.callId, from: 'app' });
    if (call.state !== 'answered') return;
    call.state = 'confirmed';
    call.inviteOpen = false;
    if (call.retransmit) clearTimeout(call.retransmit);
    if (!call.ackBye) return;
    // drachtio-server's "ACK-BYE due to cancel race condition" (notifyTerminateStaleDialog).
    this.#byDialog.delete(call.dialogId);
    this.#note({ kind: 'bye', callId: call.callId, from: 'server' });
    setTimeout(() => {
      call.state = 'ended';
      this.#note({ kind: 'bye_answered', callId: call.callId, by: 'far_end', status: 200 });
    }, 5);
  }

  /** A BYE or OPTIONS from any app connection, by dialog id; the far end's answer goes back to that connection. */
  #inDialog(socket: Socket, msgId: string, call: Call, method: 'BYE' | 'OPTIONS'): void {
    const req = this.#request(call, method, method === 'BYE' ? '2 BYE' : `${3 + this.count('options')} OPTIONS`);
    const txn = randomUUID();
    this.#sent(socket, msgId, req, txn, call.dialogId);
    const up = call.state === 'confirmed' || call.state === 'answered';
    const status = call.unreachable ? 503 : up ? 200 : 481;
    if (method === 'BYE') {
      this.#note({ kind: 'bye', callId: call.callId, from: 'app' });
      if (!call.unreachable) call.state = 'ended';
      if (call.retransmit) clearTimeout(call.retransmit);
      this.#byDialog.delete(call.dialogId);
      this.#note({ kind: 'bye_answered', callId: call.callId, by: call.unreachable ? 'server' : 'far_end', status });
    } else this.#note({ kind: 'options', callId: call.callId, status });
    // Written right after the echo, as drachtio-server may (both then come in one read).
    this.#sendSip(socket, reply(req, status, null), txn, call.dialogId);
  }

  #onAppResponse(socket: Socket, msgId: string, txnId: string, msg: Sip): void {
    const status = Number(msg.startLine.split(' ')[1]);
    const call = [...this.#calls.values()].find((c) => c.byeTxn === txnId);
    if (call) this.#note({ kind: 'bye_answered', callId: call.callId, by: 'app', status });
    this.#respond(socket, msgId, ['OK']);
  }

  #onInvite(socket: Socket, msgId: string, msg: Sip): void {
    const uri = msg.startLine.split(' ')[1] ?? '';
    const user = /^sips?:([^@;]+)@/.exec(uri)?.[1] ?? '';
    const callId = `${randomUUID()}@standin`;
    const fromTag = randomUUID().slice(0, 10);
    const toTag = randomUUID().slice(0, 10);
    const headers = Object.fromEntries(msg.headers.map(([k, v]) => [k.toLowerCase(), v]));
    // What the server adds to the app's INVITE before it leaves: Via, tags, Call-ID, CSeq, Contact.
    const invite = sip(msg.startLine, [
      ['Via', `SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bK${randomUUID().slice(0, 8)};rport`],
      ['Max-Forwards', '70'],
      ['From', `${headers.from ?? '<sip:anonymous@127.0.0.1>'};tag=${fromTag}`],
      ['To', headers.to ?? `<${uri}>`],
      ['Call-ID', callId],
      ['CSeq', '1 INVITE'],
      ['Contact', '<sip:127.0.0.1:5060>'],
      ...msg.headers.filter(([k]) => !['via', 'max-forwards', 'from', 'to', 'call-id', 'cseq', 'contact', 'content-length'].includes(k.toLowerCase())),
      ['Content-Length', String(Buffer.byteLength(msg.body))],
    ], msg.body);
    const inviteTxn = randomUUID();
    const call: Call = {
      callId, user, fromTag, toTag, inviteTxn, dialogId: `${callId};from-tag=${fromTag}`, invite, owner: socket,
      state: 'ringing', known: true, unreachable: false, inviteOpen: true, canceled: false, ackBye: false, farEnd: this.#farEnd(user),
      timer: null, retransmit: null, cancelTimer: null, byeTxn: null,
    };
    this.#calls.set(callId, call);
    this.#sent(socket, msgId, invite, inviteTxn, '');
    this.#note({ kind: 'invite', callId, user, headers });
    setTimeout(() => {
      if (call.state !== 'ringing') return;
      this.#final(call, 180);
      const fe = call.farEnd;
      if (fe.kind === 'answer') call.timer = setTimeout(() => this.#final(call, 200), fe.afterMs ?? 20);
      else if (fe.kind === 'reject') call.timer = setTimeout(() => this.#final(call, fe.status), fe.afterMs ?? 20);
    }, 5);
  }

  /** A response of the far end to the INVITE (provisional or final), through the server to the app that sent it. */
  #final(call: Call, status: number): void {
    if (call.state !== 'ringing') return;
    const res = reply(call.invite, status, call.toTag, status === 200 ? answerSdp() : null);
    if (status === 200) call.state = 'answered';
    else if (status >= 300) call.state = 'ended';
    let passed = false;
    if (call.known) {
      if (status === 200) {
        this.#byDialog.set(call.dialogId, call);
        call.ackBye = call.canceled;
        this.#retransmit(call, 1, this.#t1);
      } else if (status >= 300) call.inviteOpen = false;
      passed = !call.owner.destroyed;
      if (passed) this.#sendSip(call.owner, res, call.inviteTxn, status === 200 ? call.dialogId : '');
    }
    this.#note({ kind: 'response_sent', callId: call.callId, status, method: 'INVITE', passed });
  }

  /** The far end's 200 again (T1, 2T1 … at most T2 = 8×T1 apart) until it is ACKed; after 64×T1 it gives up with a BYE. */
  #retransmit(call: Call, count: number, interval: number, elapsed = 0): void {
    call.retransmit = setTimeout(() => {
      call.retransmit = null;
      if (call.state !== 'answered') return;
      const now = elapsed + interval;
      if (now >= 64 * this.#t1) return this.farEndBye(call.callId);
      this.#note({ kind: 'retransmit', callId: call.callId, status: 200, count });
      if (call.known && !call.owner.destroyed) this.#sendSip(call.owner, reply(call.invite, 200, call.toTag, answerSdp()), call.inviteTxn, call.dialogId);
      this.#retransmit(call, count + 1, Math.min(interval * 2, 8 * this.#t1), now);
    }, interval);
  }

  #onCancel(socket: Socket, msgId: string, txnId: string, msg: Sip): void {
    const call = [...this.#calls.values()].find((c) => c.inviteTxn === txnId && c.known && c.inviteOpen);
    if (!call) return this.#refuse(socket, msgId, 'CANCEL', `unable to cancel unknown transaction id: ${txnId}`);
    const first = !call.canceled;
    call.canceled = true;
    // The server drops the INVITE 32 s (64×T1) after its first CANCEL whatever comes (IIP cancel timer).
    call.cancelTimer ??= setTimeout(() => (call.inviteOpen = false), 64 * this.#t1);
    if (!first || call.state !== 'ringing') {
      // sofia's nta_outgoing_tcancel refuses a cancelled or completed INVITE: nothing is sent.
      this.#note({ kind: 'cancel', callId: call.callId, answered: null, outcome: 'refused' });
      return this.#refuse(socket, msgId, 'CANCEL', `internal server error canceling transaction id: ${txnId}`);
    }
    const cancel = sip(`CANCEL ${msg.startLine.split(' ')[1]} SIP/2.0`, [
      ['Via', headerOf(call.invite, 'via')],
      ['Max-Forwards', '70'],
      ['From', headerOf(call.invite, 'from')],
      ['To', headerOf(call.invite, 'to')],
      ['Call-ID', call.callId],
      ['CSeq', '1 CANCEL'],
      ['Content-Length', '0'],
    ]);
    this.#sent(socket, msgId, cancel, randomUUID(), '');
    if (call.timer) clearTimeout(call.timer);
    if (call.farEnd.kind === 'answer-on-cancel') {
      // The far end's 200 reaches the server after its CANCEL went out: the server will ACK-BYE it.
      this.#note({ kind: 'cancel', callId: call.callId, answered: 200, outcome: 'crossed_200' });
      setTimeout(() => this.#final(call, 200), 5);
      return;
    }
    this.#note({ kind: 'cancel', callId: call.callId, answered: 200, outcome: '487' });
    setTimeout(() => this.#final(call, 487), 5);
  }

  /** A request of ours in the call's dialog, as the server sends it. */
  #request(call: Call, method: string, cseq: string): Sip {
    return sip(`${method} ${`sip:far@${FAR_HOST}:${FAR_PORT}`} SIP/2.0`, [
      ['Via', `SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bK${randomUUID().slice(0, 8)}`],
      ['Max-Forwards', '70'],
      ['From', `${headerOf(call.invite, 'from')}`],
      ['To', `${headerOf(call.invite, 'to')};tag=${call.toTag}`],
      ['Call-ID', call.callId],
      ['CSeq', cseq],
      ['Content-Length', '0'],
    ]);
  }

  /** The far end's BYE, as it reaches the app. */
  #farBye(c: Call): Sip {
    return sip(`BYE sip:app@127.0.0.1:5060 SIP/2.0`, [
      ['Via', `SIP/2.0/UDP ${FAR_HOST}:${FAR_PORT};branch=z9hG4bK${randomUUID().slice(0, 8)}`],
      ['Max-Forwards', '70'],
      ['From', `${headerOf(c.invite, 'to')};tag=${c.toTag}`],
      ['To', `${headerOf(c.invite, 'from')}`],
      ['Call-ID', c.callId],
      ['CSeq', '1 BYE'],
      ['Content-Length', '0'],
    ]);
  }
}
