/**
 * The SIP adapter on drachtio-srf: the agent is a drachtio application connected (outbound TCP)
 * to a drachtio-server in front of the SIP trunk. Tested against a stand-in for drachtio-server
 * (test/support/drachtio-standin.ts) that follows drachtio-server's own source where the client
 * does not tell; what only a real drachtio-server shows is in docs/trunks.md.
 *
 * Read from drachtio-srf 5.0.29's source, not its typings (which differ):
 * - `srf.connect()` returns the app, not a promise. The outcome comes as events: `connect` with
 *   `(err, hostport)` (err: the secret was refused), `error` (no server, a reset), `close` (the
 *   admin socket is gone). srf reconnects by itself with its own backoff (capped here).
 * - `createUAC`'s `cbRequest` is called `(err, req)`: `req` is the INVITE as the server sent it
 *   (its transaction id, Call-ID and From tag).
 * - drachtio-srf's own request and dialog objects stay bound to the socket they came on, so CANCEL,
 *   ACK, BYE and OPTIONS go by id on the current connection (media-agent/drachtio-requests.ts).
 *
 * Per call: `placed` once the INVITE went out; the ring timeout and a hang-up before answer send a
 * CANCEL (the INVITE then fails with 487); a 200 that crosses our CANCEL gets a BYE at once and is
 * reported as what it was (sip_status 200, no talk); a BYE from the far end fires the dialog's
 * `destroy`; our hang-up after answer is a BYE.
 *
 * When only the admin connection drops, drachtio-server keeps the calls' transactions and
 * dialogs but no longer passes anything about them to any client, the reconnected one included
 * (drachtio-server src/client-controller.cpp: responses go to the client that opened the
 * transaction, in-dialog requests to the client that owned the dialog; a far end's BYE is then
 * answered 481). What a reconnected client can still do, by id: CANCEL an INVITE still pending,
 * ACK a 200 that came while it was away, send BYE or OPTIONS in a dialog the server still has
 * (src/client.cpp, src/sip-dialog-controller.cpp). So while the connection is down the calls are
 * left as they are on the wire and nothing is reported; once it is back each call is taken back
 * or ended (`drachtio-reattach.ts`): an answered call still up is kept and watched with
 * in-dialog OPTIONS (the server will not tell us of its far end's BYE any more), one hung up
 * meanwhile is BYEd; a ringing call is CANCELed (its progress can no longer be followed), and a
 * 200 that came or comes for it is ACKed, then BYEd if we had given up on it, else taken back as
 * answered. Calls not back within `detachedLimitMs` are reported `trunk_lost` then and still
 * ended on the wire once the connection returns; a refused reconnect (nothing listens: the server
 * is gone, and its calls with it) reports them at once.
 *
 * Media (RTP) is not handled here: the offer is a fixed SDP from the settings, the place where a
 * media server (or the bot's media bridge) will plug in.
 */
import Srf from 'drachtio-srf';
import { IN_DIALOG, RequestsById, type Answer } from './drachtio-requests.ts';
import type { Trunk, TrunkCall, TrunkEvent } from './trunk.ts';
import { dialogIdOf, errMessage, gaveUpReason, lostEnd, sipStatusOf, talkUntil, wake, type Ended, type GaveUp, type DrachtioTrunkOptions, type InviteReq, type Live, type TrunkLog, type UacDialog } from './drachtio-calls.ts';
import { reattach, type ReattachPort } from './drachtio-reattach.ts';

export type { DrachtioTrunkOptions, TrunkLog } from './drachtio-calls.ts';

export class DrachtioTrunk implements Trunk {
  readonly #opts: DrachtioTrunkOptions;
  readonly #log: TrunkLog;
  readonly #srf = new Srf();
  /** Calls not reported ended yet. */
  readonly #calls = new Map<string, Live>();
  /** Calls reported ended with something still to do on the wire (a BYE, a CANCEL's outcome). */
  readonly #lingering = new Set<Live>();
  readonly #requests = new RequestsById(this.#srf, () => this.#up);
  readonly #listeners: Array<(available: boolean) => void> = [];
  #up = false;
  /** Bumped on every lost connection. */
  #gen = 0;
  #started = false;
  #closing = false;
  #failures = 0;
  #firstOutcome: (() => void) | null = null;
  #detachedTimer: NodeJS.Timeout | null = null;
  /** What the reconnect's take-back (`drachtio-reattach.ts`) may use of the trunk. */
  readonly #port: ReattachPort;

  constructor(opts: DrachtioTrunkOptions) {
    this.#opts = opts;
    this.#log = opts.log ?? (() => {});
    this.#port = {
      opts,
      log: this.#log,
      requests: this.#requests,
      gen: () => this.#gen,
      bye: (live) => this.#bye(live),
      report: (live, e) => this.#report(live, e),
      finish: (live, e) => this.#finish(live, e),
    };
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
      if (err.code === 'ECONNREFUSED') this.#serverGone();
      this.#settleStart();
    });
    // 'close' is missing from the typings' event names; srf does emit it (srf.js constructor).
    (this.#srf as unknown as NodeJS.EventEmitter).on('close', () => {
      if (this.#up && !this.#closing) this.#log('error', 'drachtio connection lost: calls stay as they are until it is back, new calls refused meanwhile', { ...where, live_calls: this.#calls.size });
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
    if (up) {
      if (this.#detachedTimer) clearTimeout(this.#detachedTimer);
      this.#detachedTimer = null;
    } else {
      this.#gen += 1;
      this.#requests.connectionLost();
      const at = Date.now();
      for (const live of this.#all()) this.#detach(live, at);
      if (!this.#closing && this.#calls.size > 0 && !this.#detachedTimer) {
        this.#detachedTimer = setTimeout(() => this.#detachedTooLong(), this.#opts.detachedLimitMs ?? 32_000);
      }
    }
    for (const l of this.#listeners) l(this.available);
    if (up) for (const live of this.#all()) if (live.detachedAt !== null) void reattach(this.#port, live);
  }

  #all(): Live[] {
    return [...this.#calls.values(), ...this.#lingering];
  }

  /** The connection that carried the call is gone: the call is left as it is on the wire. */
  #detach(live: Live, at: number): void {
    if (live.done) return;
    wake(live);
    if (live.guardTimer) clearTimeout(live.guardTimer);
    live.guardTimer = null;
    if (live.detachedAt === null) {
      live.detachedAt = at;
      // srf would have passed its BYE on: on the connection it was answered on, it was up till now.
      if (live.dialog) live.seenUpAt = at;
    }
    if (live.dialog) {
      // srf's dialog is bound to the dead socket; from now on the call is reached by its dialog id.
      (this.#srf as unknown as { removeDialog: (d: UacDialog) => void }).removeDialog(live.dialog);
      live.dialog.removeAllListeners();
      live.dialog = null;
    }
    if (!live.invite) {
      // The server had not yet said it sent the INVITE: there is no transaction to cancel or probe.
      this.#log('warn', 'INVITE unconfirmed when the drachtio connection dropped: ended trunk_lost', { call_id: live.callId });
      this.#finish(live, { type: 'ended', sip_status: 503, talk_seconds: 0, reason: 'trunk_lost' });
    }
  }

  /** The connection is not back within the limit: the calls are reported; the wire is settled once it returns. */
  #detachedTooLong(): void {
    this.#detachedTimer = null;
    if (this.#up) return;
    const calls = [...this.#calls.values()].filter((l) => l.detachedAt !== null);
    if (calls.length === 0) return;
    this.#log('error', 'drachtio connection not back: calls reported trunk_lost, ended on the wire once it returns', { calls: calls.length, after_ms: this.#opts.detachedLimitMs ?? 32_000 });
    for (const live of calls) this.#report(live, lostEnd(live));
  }

  /** A refused reconnect: nothing listens on the server's port, so the server and its calls are gone. */
  #serverGone(): void {
    if (this.#up) return;
    const calls = this.#all().filter((l) => l.detachedAt !== null);
    if (calls.length === 0) return;
    this.#log('error', 'drachtio-server is not running (connection refused): its calls ended with it (trunk_lost)', { calls: calls.length });
    for (const live of calls) this.#finish(live, lostEnd(live));
  }

  /** Tells the call's end once; the call may still have something to do on the wire. */
  #report(live: Live, e: Ended): void {
    if (live.reported) return;
    live.reported = true;
    if (this.#calls.get(live.callId) === live) {
      this.#calls.delete(live.callId);
      if (!live.done) this.#lingering.add(live);
    }
    if (live.ringTimer) clearTimeout(live.ringTimer);
    live.ringTimer = null;
    live.emit(e);
  }

  /** Nothing more to do for the call; `e` is reported if its end was not yet. */
  #finish(live: Live, e?: Ended): void {
    if (e) this.#report(live, e);
    if (live.done) return;
    live.done = true;
    if (live.ringTimer) clearTimeout(live.ringTimer);
    if (live.guardTimer) clearTimeout(live.guardTimer);
    wake(live);
    if (this.#calls.get(live.callId) === live) this.#calls.delete(live.callId);
    this.#lingering.delete(live);
  }

  originate(call: TrunkCall, onEvent: (event: TrunkEvent) => void): void {
    if (this.#calls.has(call.call_id)) return;
    if (!this.available) return onEvent({ type: 'refused', reason: 'trunk_unavailable' });
    const live: Live = {
      callId: call.call_id, emit: onEvent, gen: this.#gen, invite: null, dialog: null, dialogId: null, placed: false, answeredAt: null,
      seenUpAt: 0, canceled: null, cancelAt: null, byeWanted: false, detachedAt: null, ringTimer: null, guardTimer: null, wake: null,
      reported: false, done: false,
    };
    this.#calls.set(call.call_id, live);
    const gaveUp = () => gaveUpReason(live);
    const current = () => live.gen === this.#gen && live.detachedAt === null;
    const uri = `sip:${call.to}@${this.#opts.trunkHost}`;
    const headers: Record<string, string> = { From: `<sip:${call.from}@${this.#opts.trunkHost}>` };
    if (this.#opts.callIdHeader) headers[this.#opts.callIdHeader] = call.call_id;
    const refuse = () => {
      // The INVITE never left: nothing was placed, so this is a refusal, not a failed call.
      live.reported = live.done = true;
      if (this.#calls.get(live.callId) === live) this.#calls.delete(live.callId);
      onEvent({ type: 'refused', reason: 'trunk_unavailable' });
    };
    let uac: Promise<UacDialog>;
    let rang = false;
    try {
      uac = this.#srf.createUAC(uri, { headers, localSdp: this.#opts.localSdp }, {
        // drachtio-srf 5.0.29 calls this (err, req) (srf.js launchRequest), not (req).
        cbRequest: ((err: unknown, req?: InviteReq) => {
          if (err || !req || live.done || !current()) return;
          live.invite = { txn: req.stackTxnId, uri: req.uri, dialogId: dialogIdOf(req) };
          live.placed = true;
          onEvent({ type: 'placed', sip_status: 100 });
          if (live.canceled) return this.#sendCancel(live);
          live.ringTimer = setTimeout(() => this.#cancel(live, 'timeout'), call.ring_timeout_s * 1000);
        }) as unknown as (req: Srf.SrfRequest) => void,
        // The far end rings (180) or sends early media (183): `ringing`, once (the INVITE's 100 is `placed`).
        cbProvisional: (res: Srf.SrfResponse) => {
          if (rang || live.done || !live.placed || !current() || res.status < 180) return;
          rang = true;
          onEvent({ type: 'ringing', sip_status: res.status });
        },
      }) as unknown as Promise<UacDialog>;
    } catch (err) {
      this.#log('warn', 'INVITE not sent', { call_id: call.call_id, err: errMessage(err) });
      return refuse();
    }
    // srf settles this only on the connection the INVITE went out on (its responses come before
    // that connection's close); after a reconnect `#reattach` follows the call instead.
    uac.then(
      (dialog) => {
        if (!current()) return;
        live.dialog = dialog;
        live.dialogId = dialog.id;
        if (live.done || live.canceled) {
          // The call exists on the wire (200, ACKed by drachtio-srf) but we had given up on it:
          // a BYE at once. Reported as what happened: the far end answered (200), no talk.
          this.#report(live, { type: 'ended', sip_status: 200, talk_seconds: 0, reason: gaveUp() });
          return void this.#bye(live).then((a) => a !== 'lost' && this.#finish(live));
        }
        if (live.ringTimer) clearTimeout(live.ringTimer);
        live.answeredAt = live.seenUpAt = Date.now();
        onEvent({ type: 'answered', sip_status: 200 });
        // The far end's BYE (our own BYE removes the listeners first).
        dialog.on('destroy', () => this.#finish(live, { type: 'ended', sip_status: 200, talk_seconds: talkUntil(live, Date.now()), reason: 'completed' }));
      },
      (err: unknown) => {
        if (live.done || !current()) return;
        if (!live.placed) {
          this.#log('warn', 'INVITE not sent', { call_id: call.call_id, err: errMessage(err) });
          return refuse();
        }
        const status = sipStatusOf(err);
        if (live.canceled) return this.#finish(live, { type: 'ended', sip_status: status ?? 487, talk_seconds: 0, reason: gaveUp() });
        if (status === 486 || status === 600) return this.#finish(live, { type: 'ended', sip_status: status, talk_seconds: 0, reason: 'busy' });
        if (status === 408 || status === 480 || status === 487) return this.#finish(live, { type: 'ended', sip_status: status, talk_seconds: 0, reason: 'no_answer' });
        if (status === null) this.#log('warn', 'INVITE failed', { call_id: call.call_id, err: errMessage(err) });
        this.#finish(live, { type: 'ended', sip_status: status ?? 500, talk_seconds: 0, reason: 'failed' });
      },
    );
  }

  #cancel(live: Live, why: GaveUp): void {
    if (live.done || live.reported || live.canceled || live.answeredAt !== null) return;
    live.canceled = why;
    if (live.ringTimer) clearTimeout(live.ringTimer);
    live.ringTimer = null;
    // Before cbRequest there is nothing to cancel yet: cbRequest sends it. While the connection is
    // down the reconnect sends it.
    if (live.invite && live.detachedAt === null) this.#sendCancel(live);
  }

  /** CANCEL on the connection the INVITE went out on: its 487 (or a crossing 200) comes to createUAC. */
  #sendCancel(live: Live): void {
    // Should no final response come, the call ends at Timer B (64×T1) all the same.
    live.guardTimer = setTimeout(() => {
      this.#log('warn', 'no final response after CANCEL: ending the call', { call_id: live.callId });
      this.#finish(live, { type: 'ended', sip_status: 408, talk_seconds: 0, reason: gaveUpReason(live) });
    }, this.#opts.cancelGuardMs ?? 32_000);
    void this.#requests.send('CANCEL', live.invite!.uri, { stackTxnId: live.invite!.txn }).then((s) => {
      if (s === 'lost') return; // the reconnect cancels it
      if (s.ok) live.cancelAt = Date.now();
      else this.#log('warn', 'CANCEL not sent', { call_id: live.callId, err: s.reason });
    });
  }

  hangup(callId: string): void {
    const live = this.#calls.get(callId);
    if (!live || live.done || live.reported) return;
    if (live.answeredAt === null) return this.#cancel(live, 'hangup');
    if (live.detachedAt !== null) {
      // The BYE goes out, and the end is reported, once the connection is back.
      live.byeWanted = true;
      return;
    }
    this.#report(live, { type: 'ended', sip_status: 200, talk_seconds: talkUntil(live, Date.now()), reason: 'hangup' });
    void this.#bye(live).then((a) => a !== 'lost' && this.#finish(live));
  }

  /**
   * BYE by dialog id on the current connection. A BYE the server refuses (the dialog is gone: the
   * far end's BYE crossed ours) is logged. One the connection took with it stays owed and goes out
   * once the connection is back.
   */
  async #bye(live: Live): Promise<Answer> {
    if (live.dialog) {
      (this.#srf as unknown as { removeDialog: (d: UacDialog) => void }).removeDialog(live.dialog);
      live.dialog.removeAllListeners();
      live.dialog = null;
    }
    live.byeWanted = true;
    const a = await this.#requests.ask('BYE', IN_DIALOG, { stackDialogId: live.dialogId! });
    if (a === 'lost') return a;
    live.byeWanted = false;
    if ('refused' in a) this.#log(a.code === 'ENODIALOG' ? 'info' : 'warn', a.code === 'ENODIALOG' ? 'BYE not needed: the dialog had already ended' : 'BYE not sent', { call_id: live.callId, err: a.refused });
    return a;
  }

  /**
   * Disconnects (and stops reconnecting); never throws, connected or not. Calls reported ended
   * whose BYE or CANCEL is under way get up to `settleMs` to finish it; calls still up are left to
   * the far end.
   */
  async close(settleMs = 2_000): Promise<void> {
    this.#closing = true;
    this.#settleStart();
    if (this.#detachedTimer) clearTimeout(this.#detachedTimer);
    this.#detachedTimer = null;
    for (const until = Date.now() + settleMs; this.#up && this.#lingering.size > 0 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
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
    this.#gen += 1;
    this.#requests.connectionLost();
    // Calls still up are left to the far end and get no more events (the agent has stopped
    // listening); no timer of theirs may fire after this.
    for (const live of this.#all()) {
      live.reported = true;
      this.#finish(live);
    }
  }
}
