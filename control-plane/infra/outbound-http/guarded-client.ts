/**
 * The one guarded HTTP client for addresses a customer gives us (webhooks and recording
 * imports). A customer address is attacker-controlled input: without a guard it reaches our own
 * loopback services, the private network and the cloud metadata endpoint (server-side request
 * forgery). So every call passes three gates:
 *
 * 1. `checkTargetUrl`, syntax only: http(s), no user name or password, no numeric host in any
 *    spelling (the WHATWG parser turns `2130706433`, `0x7f.1` or `[::ffff:127.0.0.1]` into IP
 *    literals, so the parsed host is judged, never the raw text), no internal names.
 * 2. Name resolution inside the socket's own `lookup`: the name is refused when ANY resolved
 *    address is not public, and the checked addresses are the only ones the socket may use. A
 *    save-time check alone would not do: DNS may answer differently at send time (rebinding).
 * 3. After connecting, the socket's actual peer address is checked again before a byte is sent
 *    (covers IP literals, which skip lookup, and anything the lookup could not see).
 *
 * Redirects are never followed, the whole attempt is bounded in time, and only the first bytes of
 * an answer are read. `open` (recording imports, the recording bucket) is the one exception to
 * the last two: it hands the caller the answer's body as a stream, with a limit on the wait for
 * the answer and on each pause between its chunks instead of a limit on the whole, and the caller
 * reads and counts it. A caller may give a start deadline (`startBy`): it is checked right before
 * the request is written, and past it nothing is (`not_sent`). `VD_ALLOW_PRIVATE_TARGETS` (tests
 * and demos only) opens loopback, private and link-local addresses and numeric/internal hosts;
 * scheme and credential rules still apply.
 * Nothing here logs bodies or headers: they carry signatures.
 */
import { promises as dns, type LookupAddress, type LookupOptions } from 'node:dns';
import { subscribe } from 'node:diagnostics_channel';
import { isIP, isIPv4 } from 'node:net';
import type { Readable } from 'node:stream';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, type Dispatcher } from 'undici';

export type LookupFn = (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;

export type OutboundOptions = {
  /** VD_ALLOW_PRIVATE_TARGETS: loopback/private (and numeric hosts) allowed, for local test receivers. */
  allowPrivate: boolean;
  /** Injectable DNS (tests simulate DNS rebinding with it). */
  lookup?: LookupFn;
  /** Whole attempt: connect + headers + body. */
  timeoutMs?: number;
  /** Read at most this much of an answer body, then stop reading; the status is still reported. */
  maxResponseBytes?: number;
  /** First bytes of the answer kept for logs. */
  keepBytes?: number;
  /** Keep-alive pool size per origin. */
  connectionsPerOrigin?: number;
};

/**
 * `not_sent`: the caller's start deadline (`PostOptions.startBy`) had passed when the request
 * was about to be written, so not a byte of it left: no attempt was made.
 */
export type OutboundResult =
  | { kind: 'answered'; status: number; durationMs: number; bodyStart: string; retryAfter: string | null; remoteAddress: string | null }
  | { kind: 'refused_address' | 'timeout' | 'connection_refused' | 'connection_failed' | 'error' | 'not_sent'; durationMs: number; message: string };

export type PostOptions = {
  /**
   * The latest moment (`performance.now()`, the monotonic clock) at which the request may start.
   * Checked when `post` is called and again immediately before the request's first byte is
   * written to a socket (after any wait for a name, a connection or a free socket, and after any
   * stall of the event loop in between): past it, nothing is written and `post` answers
   * `not_sent`. A webhook worker passes the moment its lease stops covering a whole attempt.
   */
  startBy?: number;
};

/** Why a request got no answer (every kind of `OutboundResult` but `answered`). */
export type OutboundFailure = Exclude<OutboundResult, { kind: 'answered' }>;

/** An answer whose body is left to the caller (`open`): it must read it to its end or destroy it. */
export type StreamedAnswer = { kind: 'answered'; status: number; durationMs: number; headers: Record<string, string | string[] | undefined>; body: Dispatcher.ResponseData['body'] };

export type OpenOptions = {
  /** PUT and DELETE: the recording store's bucket (its signed requests go through this client too); POST: the QA Bot's AI upstream. */
  method?: 'GET' | 'HEAD' | 'PUT' | 'DELETE' | 'POST';
  headers?: Record<string, string>;
  /** A PUT's or POST's body, streamed (its length in the headers: a bucket refuses a chunked body; the QA Bot's upload to transcription). */
  body?: Readable | Buffer;
  /** Ends the request and its body stream (the caller gave up, or lost its lease). */
  signal?: AbortSignal;
  /** Longest wait for the answer's headers, and longest pause between two chunks of its body. */
  idleMs?: number;
};

type Checked = { ok: true; url: URL } | { ok: false; reason: string };

const MAX_URL_LENGTH = 2048;
/** Suffixes of names that only mean something inside a network (RFC 6761, RFC 8375, habit). */
const INTERNAL_SUFFIXES = ['localhost', 'local', 'internal', 'intranet', 'lan', 'home.arpa', 'localdomain', 'corp', 'arpa'];

/** A connection refused because of where it would go; `post` maps it to 'refused_address'. */
export class RefusedAddressError extends Error {
  readonly code = 'VD_REFUSED_ADDRESS';
  constructor(what: string) {
    super(`address not allowed: ${what}`);
    this.name = 'RefusedAddressError';
  }
}

/**
 * The address as ipaddr.js should judge it: an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as
 * its IPv4. Only that form is unwrapped: ipaddr.js would also unwrap the deprecated
 * IPv4-compatible `::a.b.c.d`, which is no IPv4 address at all. Null when not an address.
 */
function parsed(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  try {
    const kind = isIP(ip); // ipaddr.js alone would also take `127.1` or `0x7f.1`
    if (kind === 4) return ipaddr.IPv4.parse(ip);
    if (kind !== 6) return null;
    // Node's own reading of the text (ipaddr.js reads `::a.b.c.d` as `::ffff:a.b.c.d`).
    const v6 = ipaddr.IPv6.parse(new URL(`http://[${ip}]/`).hostname.slice(1, -1));
    const b = v6.toByteArray();
    const mapped = b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
    return mapped ? ipaddr.IPv4.parse(b.slice(12).join('.')) : v6;
  } catch {
    return null;
  }
}

/** Only public unicast. IPv6 must also be global unicast (2000::/3): ipaddr.js calls the
 * deprecated IPv4-compatible `::7f00:1` 'unicast', which it is not. */
export function isPublicAddress(ip: string): boolean {
  const addr = parsed(ip);
  if (!addr || addr.range() !== 'unicast') return false;
  return addr.kind() === 'ipv4' || (addr.toByteArray()[0] & 0xe0) === 0x20;
}

/** Whether allowPrivate may reach it: public, or loopback/private/linkLocal/uniqueLocal (IPv4-mapped judged as IPv4). */
export function isAllowedAddress(ip: string, allowPrivate: boolean): boolean {
  if (isPublicAddress(ip)) return true;
  if (!allowPrivate) return false;
  const addr = parsed(ip);
  return addr !== null && ['loopback', 'private', 'linkLocal', 'uniqueLocal'].includes(addr.range());
}

function isInternalName(host: string): boolean {
  if (host === 'localhost' || !host.includes('.')) return true;
  return INTERNAL_SUFFIXES.some((s) => host === s || host.endsWith(`.${s}`));
}

/** Syntax-level check, no DNS. The reason is fit for a 422 message. */
export function checkTargetUrl(raw: string, opts: { allowPrivate: boolean }): Checked {
  if (raw.length > MAX_URL_LENGTH) return { ok: false, reason: `address may be at most ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'address is not a valid URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: 'address must use http or https' };
  if (url.username || url.password) return { ok: false, reason: 'address may not contain a user name or password' };
  url.hash = ''; // never sent anyway
  if (opts.allowPrivate) return { ok: true, url };
  // The parser already lower-cased the name and rewrote every IPv4 spelling as a dotted quad.
  const host = url.hostname.replace(/\.+$/, '');
  if (host.startsWith('[') || isIPv4(host)) return { ok: false, reason: 'numeric addresses are not allowed' };
  if (isInternalName(host)) return { ok: false, reason: 'internal host names are not allowed' };
  return { ok: true, url };
}

const defaultLookup: LookupFn = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })) as Array<{ address: string; family: 4 | 6 }>;

/** Save-time check: the syntax, then the name's current addresses. A name that does not resolve
 * is accepted here; it is checked again on every connection. */
export async function checkTargetAddress(raw: string, opts: { allowPrivate: boolean; lookup?: LookupFn }): Promise<Checked> {
  const checked = checkTargetUrl(raw, opts);
  if (!checked.ok) return checked;
  const host = checked.url.hostname.replace(/^\[|\]$/g, '');
  let addresses: Array<{ address: string }>;
  try {
    addresses = isIP(host) ? [{ address: host }] : await (opts.lookup ?? defaultLookup)(host);
  } catch {
    return checked;
  }
  if (addresses.some((a) => !isAllowedAddress(a.address, opts.allowPrivate))) {
    return { ok: false, reason: 'address resolves to a private or internal network address' };
  }
  return checked;
}

/**
 * The peer address of each request, for logs. undici does not hand the socket to the caller, but
 * its `sendHeaders` diagnostics message carries the request, whose `body` is the very Buffer
 * passed in: a WeakMap keyed by that Buffer links the two. Empty bodies report null.
 */
const peerByBody = new WeakMap<Buffer, { address: string | null }>();
subscribe('undici:client:sendHeaders', (message) => {
  const { request, socket } = message as { request: { body?: unknown }; socket: { remoteAddress?: string } };
  const slot = Buffer.isBuffer(request.body) ? peerByBody.get(request.body) : undefined;
  if (slot) slot.address = socket.remoteAddress ?? null;
});

function errorCodes(err: unknown): string[] {
  const e = err as { code?: unknown; errors?: unknown[]; cause?: unknown } | null;
  if (!e || typeof e !== 'object') return [];
  const own = typeof e.code === 'string' ? [e.code] : [];
  const inner = [...(Array.isArray(e.errors) ? e.errors : []), ...(e.cause ? [e.cause] : [])];
  return [...own, ...inner.flatMap(errorCodes)];
}

/** Why a request was not written: its start deadline had passed. */
class StartDeadlinePassed extends Error {
  readonly code = 'VD_START_DEADLINE_PASSED';
  constructor(lateMs: number) {
    super(`not sent: the request would have started ${Math.round(lateMs)} ms after its start deadline`);
    this.name = 'StartDeadlinePassed';
  }
}

/** Ends an answer read to `maxResponseBytes`: ours, expected; the connection is dropped, not read to its end. */
class ReadEnough extends Error {}

const RETRY_AFTER = 'retry-after';

/**
 * One `post`, as undici's own dispatch handler (no response stream, no header object, no abort
 * signal): undici calls it back as the request goes out and its answer comes in, and it settles
 * the attempt's promise once. Through `request()` the stream, its promises and the parsed headers
 * of each answer were a visible share of a webhook attempt's cost.
 *
 * The start deadline is checked in `onConnect`, which undici calls synchronously right before it
 * writes the request line, headers and body to the socket, whether the socket is new or reused;
 * aborting there writes nothing (and drops that socket).
 */
class PostHandler {
  readonly #started: number;
  readonly #startBy: number | undefined;
  readonly #keepBytes: number;
  readonly #maxResponseBytes: number;
  readonly #timeoutMessage: string;
  readonly #peer: { address: string | null };
  readonly #resolve: (r: OutboundResult) => void;
  #abort: ((err: Error) => void) | null = null;
  #timer: NodeJS.Timeout | null = null;
  #timedOut = false;
  #settled = false;
  #status = 0;
  #retryAfter: string | null = null;
  #kept: Buffer[] = [];
  #keptBytes = 0;
  #readBytes = 0;

  constructor(
    o: { started: number; startBy: number | undefined; keepBytes: number; maxResponseBytes: number; timeoutMs: number; peer: { address: string | null } },
    resolve: (r: OutboundResult) => void,
  ) {
    this.#started = o.started;
    this.#startBy = o.startBy;
    this.#keepBytes = o.keepBytes;
    this.#maxResponseBytes = o.maxResponseBytes;
    this.#timeoutMessage = `no complete answer within ${o.timeoutMs} ms`;
    this.#peer = o.peer;
    this.#resolve = resolve;
    // The whole attempt (waiting for a socket, connecting, the answer) is bounded.
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      this.#abort?.(new Error('time limit reached'));
    }, o.timeoutMs);
  }

  #ms(): number {
    return Math.round(performance.now() - this.#started);
  }

  #settle(r: OutboundResult): void {
    if (this.#settled) return;
    this.#settled = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#resolve(r);
  }

  #answered(): void {
    const kept = this.#kept.length === 1 ? this.#kept[0] : Buffer.concat(this.#kept);
    this.#settle({ kind: 'answered', status: this.#status, durationMs: this.#ms(), bodyStart: decoder.decode(kept), retryAfter: this.#retryAfter, remoteAddress: this.#peer.address });
  }

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort;
    if (this.#timedOut) return abort(new Error('time limit reached'));
    if (this.#startBy !== undefined) {
      const late = performance.now() - this.#startBy;
      if (late > 0) abort(new StartDeadlinePassed(late));
    }
  }

  onHeaders(statusCode: number, rawHeaders: Array<Buffer | string>): boolean {
    if (statusCode < 200) return true; // informational: the answer is still to come
    this.#status = statusCode;
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = rawHeaders[i];
      if (name.length === RETRY_AFTER.length && name.toString('latin1').toLowerCase() === RETRY_AFTER) {
        this.#retryAfter = rawHeaders[i + 1].toString('latin1');
        break;
      }
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.#keptBytes < this.#keepBytes) {
      const part = chunk.subarray(0, this.#keepBytes - this.#keptBytes);
      this.#kept.push(part);
      this.#keptBytes += part.length;
    }
    this.#readBytes += chunk.length;
    if (this.#readBytes >= this.#maxResponseBytes) {
      // Enough read: the answer is what came so far, and the connection is dropped rather than read to its end.
      this.#answered();
      this.#abort?.(new ReadEnough());
      return false;
    }
    return true;
  }

  onComplete(): void {
    this.#answered();
  }

  onError(err: Error): void {
    if (this.#settled) return;
    this.#settle(failureOf(err, this.#ms(), this.#timedOut, this.#timeoutMessage));
  }

  onUpgrade(): void {
    this.onError(new Error('unexpected upgrade'));
  }
}

const TIMEOUT_CODES = ['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT'];
const SOCKET_CODES = ['UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'ENOTFOUND', 'EAI_AGAIN'];

export class OutboundClient {
  readonly #allowPrivate: boolean;
  readonly #timeoutMs: number;
  readonly #maxResponseBytes: number;
  readonly #keepBytes: number;
  readonly #agent: Agent;
  readonly #checked = new Map<string, { ok: true; origin: string; path: string } | { ok: false; reason: string }>();

  constructor(opts: OutboundOptions) {
    this.#allowPrivate = opts.allowPrivate;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#maxResponseBytes = opts.maxResponseBytes ?? 64 * 1024;
    this.#keepBytes = Math.min(opts.keepBytes ?? 512, this.#maxResponseBytes);
    const lookup = opts.lookup ?? defaultLookup;
    const allowed = (ip: string) => isAllowedAddress(ip, this.#allowPrivate);

    // Gate 2: net/tls call this instead of dns.lookup, with `all: true` when autoSelectFamily is on.
    const guardedLookup = (
      hostname: string,
      options: LookupOptions,
      callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
    ): void => {
      lookup(hostname).then(
        (found) => {
          const bad = found.find((a) => !allowed(a.address));
          // The address itself is not named: a customer must not learn the platform's internal addresses.
          if (bad) return callback(new RefusedAddressError(`${hostname} resolves to an address that is not public`), '');
          const want = options.family === 4 || options.family === 6 ? options.family : 0;
          const usable = found.filter((a) => want === 0 || a.family === want);
          if (usable.length === 0) {
            return callback(Object.assign(new Error(`${hostname} has no usable address`), { code: 'ENOTFOUND' }), '');
          }
          if (options.all) callback(null, usable);
          else callback(null, usable[0].address, usable[0].family);
        },
        (err: Error) => callback(err, ''),
      );
    };
    const base = buildConnector({ lookup: guardedLookup, timeout: this.#timeoutMs });

    // Gate 3: IP literals skip lookup, so judge them before connecting; and judge every socket's
    // actual peer before undici may write to it.
    const connect: buildConnector.connector = (options, callback) => {
      if (isIP(options.hostname) && !allowed(options.hostname)) {
        return callback(new RefusedAddressError(options.hostname), null);
      }
      base(options, (...args) => {
        if (args[0]) return callback(args[0], null);
        const socket = args[1];
        const peer = socket.remoteAddress;
        if (!peer || !allowed(peer)) {
          socket.destroy();
          return callback(new RefusedAddressError(`connected to ${peer ?? 'an unknown address'}`), null);
        }
        callback(null, socket);
      });
    };
    this.#agent = new Agent({ connect, pipelining: 1, connections: opts.connectionsPerOrigin ?? 64 });
  }

  /** POSTs the body. Never throws for network or HTTP outcomes; never follows a redirect. */
  async post(url: string, body: string, headers: Record<string, string>, opts: PostOptions = {}): Promise<OutboundResult> {
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    if (opts.startBy !== undefined && started > opts.startBy) {
      return { kind: 'not_sent', durationMs: 0, message: new StartDeadlinePassed(started - opts.startBy).message };
    }
    const checked = this.#check(url);
    if (!checked.ok) return { kind: 'refused_address', durationMs: ms(), message: checked.reason };

    const payload = Buffer.from(body);
    const peer = { address: null as string | null };
    peerByBody.set(payload, peer);
    return new Promise<OutboundResult>((resolve) => {
      const handler = new PostHandler(
        { started, startBy: opts.startBy, keepBytes: this.#keepBytes, maxResponseBytes: this.#maxResponseBytes, timeoutMs: this.#timeoutMs, peer },
        resolve,
      );
      try {
        this.#agent.dispatch(
          { origin: checked.origin, path: checked.path, method: 'POST', headers, body: payload, headersTimeout: this.#timeoutMs, bodyTimeout: this.#timeoutMs },
          handler as unknown as Dispatcher.DispatchHandler,
        );
      } catch (err) {
        handler.onError(err as Error);
      }
    });
  }

  /**
   * Sends a request (a GET; a PUT, DELETE or POST whose body streams out) and hands back the
   * answer with its body unread, for answers too large to hold (a recording file). The same three gates and the same refusal of redirects as `post`
   * (a 3xx is answered, never followed). No limit on the whole: `idleMs` bounds the wait for the
   * headers and each pause between chunks. Never throws; the body stream may still fail later
   * (a pause past `idleMs`, the signal, the peer gone), and the caller must read it or destroy it.
   */
  async open(url: string, opts: OpenOptions = {}): Promise<StreamedAnswer | OutboundFailure> {
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    const checked = this.#check(url);
    if (!checked.ok) return { kind: 'refused_address', durationMs: ms(), message: checked.reason };
    const idleMs = opts.idleMs ?? this.#timeoutMs;
    try {
      const res = await this.#agent.request({
        origin: checked.origin,
        path: checked.path,
        method: opts.method ?? 'GET',
        headers: opts.headers,
        body: opts.body,
        signal: opts.signal,
        headersTimeout: idleMs,
        bodyTimeout: idleMs,
      });
      return { kind: 'answered', status: res.statusCode, durationMs: ms(), headers: res.headers, body: res.body };
    } catch (err) {
      return failureOf(err, ms(), false, `no answer within ${idleMs} ms`);
    }
  }

  /**
   * `checkTargetUrl` of a URL, remembered: it is syntax only (no DNS), so its answer for a string
   * never changes, and a connection's every message goes to the same one.
   */
  #check(url: string): { ok: true; origin: string; path: string } | { ok: false; reason: string } {
    let c = this.#checked.get(url);
    if (!c) {
      const r = checkTargetUrl(url, { allowPrivate: this.#allowPrivate });
      c = r.ok ? { ok: true, origin: r.url.origin, path: r.url.pathname + r.url.search } : r;
      if (this.#checked.size >= 1000) this.#checked.clear();
      this.#checked.set(url, c);
    }
    return c;
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

const decoder = new TextDecoder();

/** What a request's error means; `timedOut`: the caller's own time limit ended it. */
export function failureOf(err: unknown, durationMs: number, timedOut: boolean, timeoutMessage: string): OutboundFailure {
  const message = err instanceof Error ? err.message : String(err);
  const codes = errorCodes(err);
  if (err instanceof StartDeadlinePassed || codes.includes('VD_START_DEADLINE_PASSED')) {
    return { kind: 'not_sent', durationMs, message };
  }
  if (err instanceof RefusedAddressError || codes.includes('VD_REFUSED_ADDRESS')) {
    return { kind: 'refused_address', durationMs, message };
  }
  if (timedOut || codes.some((c) => TIMEOUT_CODES.includes(c))) return { kind: 'timeout', durationMs, message: timeoutMessage };
  if (codes.includes('ECONNREFUSED')) return { kind: 'connection_refused', durationMs, message };
  if (codes.some((c) => SOCKET_CODES.includes(c) || /^E[A-Z]+$/.test(c))) {
    return { kind: 'connection_failed', durationMs, message };
  }
  return { kind: 'error', durationMs, message };
}

export function clientFromConfig(config: { VD_ALLOW_PRIVATE_TARGETS: boolean }, extra?: Partial<OutboundOptions>): OutboundClient {
  return new OutboundClient({ ...extra, allowPrivate: config.VD_ALLOW_PRIVATE_TARGETS });
}
