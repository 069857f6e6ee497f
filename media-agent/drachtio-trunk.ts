/**
 * The SIP adapter on drachtio-srf: the agent is a drachtio application connected (outbound TCP)
 * to a drachtio-server in front of the SIP trunk. Tested against a stand-in for drachtio-server
 * written from drachtio-srf's own source (test/support/drachtio-standin.ts); what that covers and
 * what only a real drachtio-server shows is in docs/agent-protocol.md.
 *
 * Read from drachtio-srf 5.0.29's source, not its typings (which differ):
 * - `srf.connect()` returns the app, not a promise. The outcome comes as events: `connect` with
 *   `(err, hostport)` (err: the secret was refused), `error` (no server, a reset), `close` (the
 *   admin socket is gone). srf reconnects by itself with its own backoff (capped here).
 * - `createUAC`'s `cbRequest` is called `(err, req)`: `req` is the INVITE in flight, kept to
 *   CANCEL it (`req.cancel()`, which can throw synchronously once the connection is gone).
 * - `dialog.destroy()` returns a promise (it rejects when the BYE cannot be sent).
 * - `srf.disconnect()` throws when there is no socket.
 *
 * Per call: `placed` once the INVITE went out; the ring timeout and a hang-up before answer send a
 * CANCEL (the INVITE then fails with 487); a 200 that crosses our CANCEL gets a BYE at once and is
 * reported as what it was (sip_status 200, no talk); a BYE from the far end fires the dialog's
 * `destroy`; our hang-up after answer is `dialog.destroy()`. While the drachtio connection is
 * down, `originate` is refused (`trunk_unavailable`); when it drops, every live call ends with
 * `trunk_lost` (their transactions and dialogs were on that connection).
 *
 * Media (RTP) is not handled here: the offer is a fixed SDP from the settings, the place where a
 * media server (or the bot's media bridge) will plug in.
 */
import Srf from 'drachtio-srf';
import type { Trunk, TrunkCall, TrunkEvent } from './trunk.ts';

export type TrunkLog = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

export type DrachtioTrunkOptions = {
  host: string;
  port: number;
  secret: string;
  /** Host (and port) of the SIP trunk: calls go to sip:<number>@<trunkHost>. */
  trunkHost: string;
  /** The SDP offered in the INVITE. */
  localSdp: string;
  /** A header that carries the platform's call id to the carrier (null or unset: not sent). */
  callIdHeader?: string | null;
  /** Longest wait between reconnect attempts (drachtio-srf's backoff grows without bound otherwise). */
  reconnectMaxDelayMs?: number;
  /** How long `start()` waits for the first connection's outcome. */
  startWaitMs?: number;
  /** After our CANCEL, how long to wait for the INVITE's final response before ending the call anyway (RFC 3261 Timer B). */
  cancelGuardMs?: number;
  log?: TrunkLog;
};

/** The INVITE in flight, as drachtio-srf hands it to cbRequest. */
type InviteReq = { cancel: (cb: (err: unknown) => void) => void };
/** The dialog createUAC resolves with: destroy() returns a promise (the typings say void). */
type UacDialog = { destroy: () => unknown; on: (event: 'destroy', fn: () => void) => unknown };

type Live = {
  callId: string;
  req: InviteReq | null;
  dialog: UacDialog | null;
  placed: boolean;
  ringTimer: NodeJS.Timeout | null;
  guardTimer: NodeJS.Timeout | null;
  answeredAt: number | null;
  canceled: 'timeout' | 'hangup' | null;
  ended: boolean;
  emit: (e: TrunkEvent) => void;
};

type Ended = Extract<TrunkEvent, { type: 'ended' }>;

export class DrachtioTrunk implements Trunk {
  readonly #opts: DrachtioTrunkOptions;
  readonly #log: TrunkLog;
  readonly #srf = new Srf();
  readonly #calls = new Map<string, Live>();
  readonly #listeners: Array<(available: boolean) => void> = [];
  #up = false;
  #started = false;
  #closing = false;
  #failures = 0;
  #firstOutcome: (() => void) | null = null;

  constructor(opts: DrachtioTrunkOptions) {
    this.#opts = opts;
    this.#log = opts.log ?? (() => {});
    const where = { drachtio: `${opts.host}:${opts.port}` };
    this.#srf.on('connect', (err: Error | null, hostport?: string) => {
      if (err) {
        this.#failures += 1;
        this.#log('error', 'drachtio refused the secret (VD_AGENT_DRACHTIO_SECRET): not connected, retrying', { ...where, attempt: this.#failures, err: err.message });
      } else {
        this.#failures = 0;
        this.#log('info', 'connected to drachtio', { ...where, sip: hostport });
        this.#setUp(true);
      }
      this.#settleStart();
    });
    this.#srf.on('error', (err: Error & { code?: string }) => {
      if (this.#closing) return;
      this.#failures += 1;
      // One line per attempt: the backoff is capped, so this is at most one every few seconds.
      this.#log(this.#failures === 1 ? 'error' : 'warn', 'no drachtio connection: retrying', { ...where, attempt: this.#failures, err: err.code ?? err.message });
      this.#settleStart();
    });
    // 'close' is missing from the typings' event names; srf does emit it (srf.js constructor).
    (this.#srf as unknown as NodeJS.EventEmitter).on('close', () => {
      if (this.#up && !this.#closing) this.#log('error', 'drachtio connection lost: live calls end (trunk_lost), new calls refused until it is back', { ...where, live_calls: this.#calls.size });
      this.#setUp(false);
    });
  }

  get available(): boolean {
    return this.#up && !this.#closing;
  }

  onAvailability(listener: (available: boolean) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Connects and waits for the first outcome: connected, the secret refused, or no server (or
   * `startWaitMs`). It never throws for those: the trunk stays unavailable and drachtio-srf keeps
   * retrying; the agent drains itself (`trunk_down`) until the connection is up.
   */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    const wait = new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        this.#firstOutcome = null;
        this.#log('warn', 'no answer from drachtio yet: starting without it', { drachtio: `${this.#opts.host}:${this.#opts.port}` });
        resolve();
      }, this.#opts.startWaitMs ?? 5_000);
      this.#firstOutcome = () => {
        clearTimeout(t);
        resolve();
      };
    });
    this.#srf.connect({
      host: this.#opts.host,
      port: this.#opts.port,
      secret: this.#opts.secret,
      reconnect: { retryMaxDelay: this.#opts.reconnectMaxDelayMs ?? 5_000 },
    } as Srf.SrfConfig);
    await wait;
  }

  #settleStart(): void {
    const f = this.#firstOutcome;
    this.#firstOutcome = null;
    f?.();
  }

  #setUp(up: boolean): void {
    if (this.#up === up) return;
    this.#up = up;
    if (!up) {
      // Every transaction and dialog of these calls was on the lost connection: nothing more
      // will come for them, and no CANCEL or BYE can be sent. They end now and are reported.
      for (const live of [...this.#calls.values()]) {
        this.#end(live, { type: 'ended', sip_status: live.answeredAt !== null ? 200 : 503, talk_seconds: talkSeconds(live), reason: 'trunk_lost' });
      }
    }
    for (const l of this.#listeners) l(this.available);
  }

  #end(live: Live, e: Ended): void {
    if (live.ended) return;
    live.ended = true;
    if (live.ringTimer) clearTimeout(live.ringTimer);
    if (live.guardTimer) clearTimeout(live.guardTimer);
    if (this.#calls.get(live.callId) === live) this.#calls.delete(live.callId);
    live.emit(e);
  }

  originate(call: TrunkCall, onEvent: (event: TrunkEvent) => void): void {
    if (this.#calls.has(call.call_id)) return;
    if (!this.available) return onEvent({ type: 'refused', reason: 'trunk_unavailable' });
    const live: Live = { callId: call.call_id, req: null, dialog: null, placed: false, ringTimer: null, guardTimer: null, answeredAt: null, canceled: null, ended: false, emit: onEvent };
    this.#calls.set(call.call_id, live);
    const gaveUp = () => (live.canceled === 'timeout' ? 'no_answer' : 'canceled');
    const uri = `sip:${call.to}@${this.#opts.trunkHost}`;
    const headers: Record<string, string> = { From: `<sip:${call.from}@${this.#opts.trunkHost}>` };
    if (this.#opts.callIdHeader) headers[this.#opts.callIdHeader] = call.call_id;
    const refuse = () => {
      // The INVITE never left: nothing was placed, so this is a refusal, not a failed call.
      live.ended = true;
      if (this.#calls.get(live.callId) === live) this.#calls.delete(live.callId);
      onEvent({ type: 'refused', reason: 'trunk_unavailable' });
    };
    let uac: Promise<UacDialog>;
    try {
      uac = this.#srf.createUAC(uri, { headers, localSdp: this.#opts.localSdp }, {
        // drachtio-srf 5.0.29 calls this (err, req) (srf.js launchRequest), not (req).
        cbRequest: ((err: unknown, req?: InviteReq) => {
          if (err || !req) return;
          live.req = req;
          if (live.ended) return;
          live.placed = true;
          onEvent({ type: 'placed', sip_status: 100 });
          if (live.canceled) return this.#sendCancel(live);
          live.ringTimer = setTimeout(() => this.#cancel(live, 'timeout'), call.ring_timeout_s * 1000);
        }) as unknown as (req: Srf.SrfRequest) => void,
      }) as unknown as Promise<UacDialog>;
    } catch (err) {
      this.#log('warn', 'INVITE not sent', { call_id: call.call_id, err: errMessage(err) });
      return refuse();
    }
    uac.then(
      (dialog) => {
        live.dialog = dialog;
        if (live.ended || live.canceled) {
          // The call exists on the wire (200, ACKed by drachtio-srf) but we had given up on it:
          // a BYE at once. Reported as what happened: the far end answered (200), no talk.
          this.#bye(live, dialog);
          return this.#end(live, { type: 'ended', sip_status: 200, talk_seconds: 0, reason: gaveUp() });
        }
        if (live.ringTimer) clearTimeout(live.ringTimer);
        live.answeredAt = Date.now();
        onEvent({ type: 'answered', sip_status: 200 });
        // The far end's BYE (our own BYE removes the listeners first).
        dialog.on('destroy', () => this.#end(live, { type: 'ended', sip_status: 200, talk_seconds: talkSeconds(live), reason: 'completed' }));
      },
      (err: unknown) => {
        if (live.ended) return;
        if (!live.placed) {
          this.#log('warn', 'INVITE not sent', { call_id: call.call_id, err: errMessage(err) });
          return refuse();
        }
        const status = sipStatusOf(err);
        if (live.canceled) return this.#end(live, { type: 'ended', sip_status: status ?? 487, talk_seconds: 0, reason: gaveUp() });
        if (status === 486 || status === 600) return this.#end(live, { type: 'ended', sip_status: status, talk_seconds: 0, reason: 'busy' });
        if (status === 408 || status === 480 || status === 487) return this.#end(live, { type: 'ended', sip_status: status, talk_seconds: 0, reason: 'no_answer' });
        if (status === null) this.#log('warn', 'INVITE failed', { call_id: call.call_id, err: errMessage(err) });
        this.#end(live, { type: 'ended', sip_status: status ?? 500, talk_seconds: 0, reason: 'failed' });
      },
    );
  }

  #cancel(live: Live, why: 'timeout' | 'hangup'): void {
    if (live.ended || live.canceled || live.answeredAt !== null) return;
    live.canceled = why;
    if (live.ringTimer) clearTimeout(live.ringTimer);
    // Before cbRequest there is nothing to cancel yet: cbRequest sends it.
    if (live.req) this.#sendCancel(live);
  }

  #sendCancel(live: Live): void {
    const req = live.req!;
    const why = live.canceled;
    // The INVITE then fails with 487 (or a 200 crosses the CANCEL): originate's handlers end it.
    // Should neither come, the call ends at Timer B (64×T1) all the same.
    live.guardTimer = setTimeout(() => {
      this.#log('warn', 'no final response after CANCEL: ending the call', { call_id: live.callId });
      this.#end(live, { type: 'ended', sip_status: 408, talk_seconds: 0, reason: why === 'timeout' ? 'no_answer' : 'canceled' });
    }, this.#opts.cancelGuardMs ?? 32_000);
    try {
      req.cancel((err: unknown) => {
        if (err) this.#log('warn', 'CANCEL not sent', { call_id: live.callId, err: errMessage(err) });
      });
    } catch (err) {
      // drachtio-srf throws here when its connection is gone; the close ends the call (trunk_lost).
      this.#log('warn', 'CANCEL not sent', { call_id: live.callId, err: errMessage(err) });
    }
  }

  /** Sends a BYE; a failure (the connection is gone) is logged, never thrown. */
  #bye(live: Live, dialog: UacDialog): void {
    try {
      Promise.resolve(dialog.destroy()).catch((err: unknown) => this.#log('warn', 'BYE not sent', { call_id: live.callId, err: errMessage(err) }));
    } catch (err) {
      this.#log('warn', 'BYE not sent', { call_id: live.callId, err: errMessage(err) });
    }
  }

  hangup(callId: string): void {
    const live = this.#calls.get(callId);
    if (!live || live.ended) return;
    if (live.answeredAt === null || !live.dialog) return this.#cancel(live, 'hangup');
    this.#bye(live, live.dialog);
    this.#end(live, { type: 'ended', sip_status: 200, talk_seconds: talkSeconds(live), reason: 'hangup' });
  }

  /** Disconnects (and stops reconnecting); never throws, connected or not. Calls still up are left to the far end. */
  async close(): Promise<void> {
    this.#closing = true;
    this.#settleStart();
    const app = this.#srf as unknown as { _app?: { client?: { wp?: { closing?: boolean; reconnectVars?: { retryTimer?: NodeJS.Timeout | null } } } } };
    const wp = app._app?.client?.wp;
    if (wp) {
      // A reconnect already scheduled would open a new socket after we left.
      wp.closing = true;
      if (wp.reconnectVars?.retryTimer) clearTimeout(wp.reconnectVars.retryTimer);
      if (wp.reconnectVars) wp.reconnectVars.retryTimer = null;
    }
    if (this.#up) {
      try {
        this.#srf.disconnect();
      } catch (err) {
        this.#log('warn', 'drachtio disconnect', { err: errMessage(err) });
      }
    }
    this.#up = false;
    // Calls still up are left to the far end and get no more events (the agent has stopped
    // listening); no timer of theirs may fire after this.
    for (const live of this.#calls.values()) {
      live.ended = true;
      if (live.ringTimer) clearTimeout(live.ringTimer);
      if (live.guardTimer) clearTimeout(live.guardTimer);
    }
    this.#calls.clear();
  }
}

function talkSeconds(live: Live): number {
  return live.answeredAt === null ? 0 : Math.round((Date.now() - live.answeredAt) / 100) / 10;
}

/** drachtio-srf rejects createUAC with a SipError carrying the final response's `status`. */
function sipStatusOf(err: unknown): number | null {
  const s = (err as { status?: unknown } | null)?.status;
  return typeof s === 'number' ? s : null;
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
