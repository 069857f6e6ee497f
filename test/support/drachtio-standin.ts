/**
 * A stand-in for drachtio-server on loopback, for tests of the media agent's drachtio trunk with
 * the real drachtio-srf client. Written from drachtio-srf 5.0.29's own source
 * (node_modules/drachtio-srf/lib/wire-protocol.js, drachtio-agent.js, srf.js, dialog.js,
 * request.js), not from the server's: it answers what that client sends the way the client reads
 * it. What it covers and what only a real drachtio-server shows is in docs/agent-protocol.md.
 *
 * The admin protocol, as the client speaks it:
 * - framing: `<byte length>#<msgId>|<type>|…` both ways (wire-protocol.js `send` and `_onData`).
 * - the client's first frame: `authenticate|<secret>|<tags>`; the answer is
 *   `<id>|response|<its msgId>|OK|<hostport>|<server version>` (drachtio-agent.js `_onConnect`).
 *   A wrong secret here gets `NOK|…` and the socket is closed (the client then reconnects with
 *   its backoff, and is refused again).
 * - a request the app sends: `sip|<stackTxnId>|<stackDialogId>\r\n<SIP message>` (an INVITE has
 *   neither, a CANCEL the INVITE's transaction id, ACK and BYE the dialog id). The server answers
 *   `response|<msgId>|OK|application|<len>|udp|<addr>|<port>|<time>|<txnId>|<dialogId>\r\n<the
 *   request as sent>` (drachtio-agent.js `_makeRequest`), and later SIP responses to it arrive as
 *   `sip|network|<len>|udp|<addr>|<port>|<time>|<txnId>|<dialogId>\r\n<SIP response>`.
 * - an ACK or a response the app sends (`sendAck`, `sendResponse`) is the same `sip|…` frame.
 * - a request from the far end (a BYE) arrives as `sip|network|…|<txnId>|<dialogId>\r\n<request>`
 *   and the app answers it with a `sip|<txnId>|…` response frame.
 * - the 200 to a CANCEL is not passed to the app (drachtio-agent.js: "sofia … does not pass up
 *   the 200 OK response to a CANCEL"): the stand-in records it, the app sees only the 487.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';

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
  | { kind: 'response_sent'; callId: string; status: number; method: string }
  | { kind: 'cancel'; callId: string; answered: 200; outcome: '487' | 'crossed_200' | 'too_late' }
  | { kind: 'ack'; callId: string }
  | { kind: 'bye'; callId: string; from: 'app' | 'far_end' }
  | { kind: 'bye_answered'; callId: string; by: 'app' | 'far_end'; status: number }
  | { kind: 'dropped'; sockets: number };

type Call = {
  callId: string;
  user: string;
  fromTag: string;
  toTag: string;
  inviteTxn: string;
  dialogId: string;
  invite: Sip;
  socket: Socket;
  /** 'ringing' until a final response; 'confirmed' after a 200; 'ended' after a BYE or a failure. */
  state: 'ringing' | 'confirmed' | 'ended';
  farEnd: FarEnd;
  timer: NodeJS.Timeout | null;
  byeTxn: string | null;
};

type Sip = { startLine: string; headers: Array<[string, string]>; body: string };

const CRLF = '\r\n';
const FAR_HOST = '127.0.0.2';
const FAR_PORT = '5060';

export type StandinOptions = {
  secret: string;
  /** The far end's behaviour for an INVITE to this user part (the E.164 number). Default: ring. */
  farEnd?: (user: string) => FarEnd;
};

export class DrachtioStandin {
  readonly events: StandinEvent[] = [];
  readonly #secret: string;
  #farEnd: (user: string) => FarEnd;
  readonly #sockets = new Set<Socket>();
  readonly #calls = new Map<string, Call>();
  readonly #byDialog = new Map<string, Call>();
  #server: Server | null = null;
  #port = 0;
  #waiters: Array<() => void> = [];

  private constructor(opts: StandinOptions) {
    this.#secret = opts.secret;
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

  /** Drops every admin socket (the server process died or the network cut it). */
  dropConnections(): void {
    const n = this.#sockets.size;
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    this.#note({ kind: 'dropped', sockets: n });
  }

  /** Stops listening and drops every admin socket: no server until `up()`. */
  async down(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    this.dropConnections();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async close(): Promise<void> {
    for (const c of this.#calls.values()) if (c.timer) clearTimeout(c.timer);
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

  callState(callId: string): Call['state'] | null {
    return this.#calls.get(callId)?.state ?? null;
  }

  /** The far end hangs up an answered call: a BYE to the app in the call's dialog. */
  farEndBye(callId: string): void {
    const c = this.#calls.get(callId);
    if (!c || c.state !== 'confirmed') throw new Error(`no confirmed call ${callId}`);
    c.state = 'ended';
    // The server forgets the dialog once it passed the BYE on: a BYE the app sends now (crossing
    // this one) is answered NOK "unable to find dialog" (drachtio-agent.js: ENODIALOG).
    this.#byDialog.delete(c.dialogId);
    c.byeTxn = randomUUID();
    const bye = sip(`BYE sip:app@127.0.0.1:5060 SIP/2.0`, [
      ['Via', `SIP/2.0/UDP ${FAR_HOST}:${FAR_PORT};branch=z9hG4bK${randomUUID().slice(0, 8)}`],
      ['Max-Forwards', '70'],
      ['From', `${headerOf(c.invite, 'to')};tag=${c.toTag}`],
      ['To', `${headerOf(c.invite, 'from')}`],
      ['Call-ID', c.callId],
      ['CSeq', '1 BYE'],
      ['Content-Length', '0'],
    ]);
    this.#note({ kind: 'bye', callId, from: 'far_end' });
    this.#sendSip(c.socket, bye, c.byeTxn, c.dialogId);
  }

  /** Resolves once an event matches (checked against those already seen, then each new one). */
  async waitFor<E extends StandinEvent['kind']>(kind: E, match: (e: Extract<StandinEvent, { kind: E }>) => boolean = () => true, timeoutMs = 3_000): Promise<Extract<StandinEvent, { kind: E }>> {
    const find = () => this.events.find((e): e is Extract<StandinEvent, { kind: E }> => e.kind === kind && match(e as Extract<StandinEvent, { kind: E }>));
    const deadline = Date.now() + timeoutMs;
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

  count(kind: StandinEvent['kind'], match: (e: StandinEvent) => boolean = () => true): number {
    return this.events.filter((e) => e.kind === kind && match(e)).length;
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
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
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
    });
  }

  #write(socket: Socket, s: string): void {
    if (socket.destroyed) return;
    socket.write(`${Buffer.byteLength(s, 'utf8')}#${s}`);
  }

  #respond(socket: Socket, msgId: string, fields: string[], raw?: string): void {
    this.#write(socket, `${randomUUID()}|response|${msgId}|${fields.join('|')}${raw === undefined ? '' : CRLF + raw}`);
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
    if (!call) return this.#respond(socket, msgId, ['NOK', 'unable to find dialog']);
    if (method === 'ACK') {
      this.#note({ kind: 'ack', callId: call.callId });
      return this.#respond(socket, msgId, ['OK']);
    }
    if (method === 'BYE') {
      const bye = sip(`BYE ${headerOf(call.invite, 'contact-uri')} SIP/2.0`, [
        ['Via', `SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bK${randomUUID().slice(0, 8)}`],
        ['Max-Forwards', '70'],
        ['From', `${headerOf(call.invite, 'from')}`],
        ['To', `${headerOf(call.invite, 'to')};tag=${call.toTag}`],
        ['Call-ID', call.callId],
        ['CSeq', '2 BYE'],
        ['Content-Length', '0'],
      ]);
      const byeTxn = randomUUID();
      this.#sent(socket, msgId, bye, byeTxn, dialogId);
      this.#note({ kind: 'bye', callId: call.callId, from: 'app' });
      const wasConfirmed = call.state === 'confirmed';
      call.state = 'ended';
      const status = wasConfirmed ? 200 : 481;
      setTimeout(() => {
        this.#sendSip(socket, reply(bye, status, null), byeTxn, dialogId);
        this.#note({ kind: 'bye_answered', callId: call.callId, by: 'far_end', status });
      }, 5);
      return;
    }
    this.#respond(socket, msgId, ['NOK', `stand-in does not handle ${method}`]);
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
      callId, user, fromTag, toTag, inviteTxn, dialogId: `${callId};from-tag=${fromTag}`, invite, socket,
      state: 'ringing', farEnd: this.#farEnd(user), timer: null, byeTxn: null,
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

  /** A response to the INVITE (provisional or final) from the far end. */
  #final(call: Call, status: number): void {
    if (call.state !== 'ringing') return;
    const res = reply(call.invite, status, status === 180 || status === 200 ? call.toTag : call.toTag, status === 200 ? answerSdp() : null);
    if (status >= 200) call.state = status === 200 ? 'confirmed' : 'ended';
    if (status === 200) this.#byDialog.set(call.dialogId, call);
    this.#sendSip(call.socket, res, call.inviteTxn, status === 200 ? call.dialogId : '');
    this.#note({ kind: 'response_sent', callId: call.callId, status, method: 'INVITE' });
  }

  #onCancel(socket: Socket, msgId: string, txnId: string, msg: Sip): void {
    const call = [...this.#calls.values()].find((c) => c.inviteTxn === txnId);
    if (!call) return this.#respond(socket, msgId, ['NOK', 'unknown transaction']);
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
    if (call.state !== 'ringing') {
      this.#note({ kind: 'cancel', callId: call.callId, answered: 200, outcome: 'too_late' });
      return;
    }
    if (call.farEnd.kind === 'answer-on-cancel') {
      this.#note({ kind: 'cancel', callId: call.callId, answered: 200, outcome: 'crossed_200' });
      setTimeout(() => this.#final(call, 200), 5);
      return;
    }
    this.#note({ kind: 'cancel', callId: call.callId, answered: 200, outcome: '487' });
    setTimeout(() => this.#final(call, 487), 5);
  }
}

// ---- SIP text, only as much as these exchanges need ----

function sip(startLine: string, headers: Array<[string, string]>, body = ''): Sip {
  return { startLine, headers, body };
}

function parse(raw: string): Sip {
  const end = raw.indexOf(CRLF + CRLF);
  const head = end === -1 ? raw : raw.slice(0, end);
  const body = end === -1 ? '' : raw.slice(end + 4);
  const [startLine, ...lines] = head.split(CRLF);
  const headers: Array<[string, string]> = [];
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
  }
  return { startLine: startLine ?? '', headers, body };
}

function render(m: Sip): string {
  return [m.startLine, ...m.headers.map(([k, v]) => `${k}: ${v}`), '', m.body].join(CRLF);
}

function headerOf(m: Sip, name: string): string {
  if (name === 'contact-uri') return /<([^>]+)>/.exec(headerOf(m, 'contact'))?.[1] ?? 'sip:127.0.0.1:5060';
  return m.headers.find(([k]) => k.toLowerCase() === name)?.[1] ?? '';
}

const REASONS: Record<number, string> = {
  180: 'Ringing', 200: 'OK', 481: 'Call/Transaction Does Not Exist', 486: 'Busy Here', 487: 'Request Terminated',
  503: 'Service Unavailable', 603: 'Decline',
};

function reply(req: Sip, status: number, toTag: string | null, body: string | null = null): Sip {
  const to = headerOf(req, 'to');
  const headers: Array<[string, string]> = [
    ['Via', headerOf(req, 'via')],
    ['From', headerOf(req, 'from')],
    ['To', toTag && !to.includes('tag=') ? `${to};tag=${toTag}` : to],
    ['Call-ID', headerOf(req, 'call-id')],
    ['CSeq', headerOf(req, 'cseq')],
  ];
  if (status === 200 && req.startLine.startsWith('INVITE')) headers.push(['Contact', `<sip:far@${FAR_HOST}:${FAR_PORT}>`]);
  if (body) headers.push(['Content-Type', 'application/sdp']);
  headers.push(['Content-Length', String(body ? Buffer.byteLength(body) : 0)]);
  return sip(`SIP/2.0 ${status} ${REASONS[status] ?? 'Status'}`, headers, body ?? '');
}

function answerSdp(): string {
  return ['v=0', `o=- 1 1 IN IP4 ${FAR_HOST}`, 's=far', `c=IN IP4 ${FAR_HOST}`, 't=0 0', 'm=audio 30000 RTP/AVP 0', 'a=rtpmap:0 PCMU/8000', ''].join(CRLF);
}
