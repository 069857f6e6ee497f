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
 * or ended (`#reattach`): an answered call still up is kept and watched with in-dialog OPTIONS
 * (the server will not tell us of its far end's BYE any more), one hung up meanwhile is BYEd; a
 * ringing call is CANCELed (its progress can no longer be followed), and a 200 that came or
 * comes for it is ACKed, then BYEd if we had given up on it, else taken back as answered. Calls
 * not back within `detachedLimitMs` are reported `trunk_lost` then and still ended on the wire
 * once the connection returns; a refused reconnect (nothing listens: the server is gone, and its
 * calls with it) reports them at once.
 *
 * Media (RTP) is not handled here: the offer is a fixed SDP from the settings, the place where a
 * media server (or the bot's media bridge) will plug in.
 */
import Srf from 'drachtio-srf';
import { IN_DIALOG, RequestsById, UNKNOWN_TXN, type Answer } from './drachtio-requests.ts';
import type { Trunk, TrunkCall, TrunkEvent } from './trunk.ts';
import { dialogIdOf, errMessage, gaveUpReason, isSignOfLife, sipStatusOf, talkUntil, type Ended, type GaveUp, type DrachtioTrunkOptions, type InviteReq, type Live, type TrunkLog, type UacDialog } from './drachtio-calls.ts';

export type { DrachtioTrunkOptions, TrunkLog } from './drachtio-calls.ts';

/** After a CANCEL sent on reconnect, how long its outcome is watched for (64×T1 and a margin). */
const CANCEL_WATCH_MS = 34_000;

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
    if (up) for (const live of this.#all()) if (live.detachedAt !== null) void this.#reattach(live);
  }

  #all(): Live[] {
    return [...this.#calls.values(), ...this.#lingering];
  }

  /** The connection that carried the call is gone: the call is left as it is on the wire. */
  #detach(live: Live, at: number): void {
    if (live.done) return;
    this.#sleepEnds(live);
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
    for (const live of calls) this.#report(live, this.#lost(live));
  }

  /** A refused reconnect: nothing listens on the server's port, so the server and its calls are gone. */
  #serverGone(): void {
    if (this.#up) return;
    const calls = this.#all().filter((l) => l.detachedAt !== null);
    if (calls.length === 0) return;
    this.#log('error', 'drachtio-server is not running (connection refused): its calls ended with it (trunk_lost)', { calls: calls.length });
    for (const live of calls) this.#finish(live, this.#lost(live));
  }

  /** trunk_lost, talk time up to the last moment the call was known up. */
  #lost(live: Live): Ended {
    return { type: 'ended', sip_status: live.answeredAt !== null ? 200 : 503, talk_seconds: talkUntil(live, live.seenUpAt), reason: 'trunk_lost' };
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
    this.#sleepEnds(live);
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

  // ---- after a reconnect ----

  /** Takes the call back on the new connection, or ends it on the wire, and reports what happened. */
  async #reattach(live: Live): Promise<void> {
    const gen = this.#gen;
    if (live.dialogId !== null) return this.#reattachDialog(live, live.answeredAt !== null);
    return this.#reattachInvite(live, gen);
  }

  /** An answered call: BYE if it was hung up meanwhile (or already reported), else take it back if its far end still has it. */
  async #reattachDialog(live: Live, checkAck = true): Promise<void> {
    if (checkAck && live.invite && (await this.#ackIfLost(live)) === 'lost') return;
    if (live.byeWanted || live.reported) {
      const a = await this.#bye(live);
      if (a === 'lost') return;
      const wasUp = 'status' in a && a.status < 300;
      return this.#finish(live, wasUp ? { type: 'ended', sip_status: 200, talk_seconds: talkUntil(live, Date.now()), reason: 'hangup' } : this.#lost(live));
    }
    const a = await this.#requests.ask('OPTIONS', IN_DIALOG, { stackDialogId: live.dialogId! });
    if (a === 'lost' || live.done) return;
    if ('status' in a && a.status !== 481 && a.status !== 408) {
      // Hung up while the OPTIONS was out: BYE now.
      if (live.byeWanted) return this.#reattachDialog(live, false);
      return this.#adopt(live, isSignOfLife(a.status));
    }
    // The server no longer has the dialog (the far end's BYE was answered 481 while we were away,
    // or the server is a new one), or the far end no longer has it: the call ended unseen.
    this.#log('info', 'call ended while the drachtio connection was down', { call_id: live.callId, answer: 'status' in a ? a.status : a.refused });
    if ('status' in a) void this.#bye(live);
    this.#finish(live, this.#lost(live));
  }

  /**
   * The ACK srf wrote for the 200 may have died with the connection. drachtio-server keeps the
   * INVITE's transaction until the ACK, so a CANCEL of it tells: refused as unknown once ACKed,
   * refused otherwise while the 200 waits (a completed INVITE cannot be cancelled: nothing is
   * sent). Only then is the ACK sent again: a far end may take a second ACK for an error (sipp
   * aborts the call).
   */
  async #ackIfLost(live: Live): Promise<'lost' | void> {
    const inv = live.invite!;
    const c = await this.#requests.send('CANCEL', inv.uri, { stackTxnId: inv.txn });
    if (c === 'lost') return c;
    if (c.ok || UNKNOWN_TXN.test(c.reason)) return;
    this.#log('warn', 'the ACK of an answered call was lost with the drachtio connection: sent again', { call_id: live.callId });
    if ((await this.#requests.send('ACK', IN_DIALOG, { stackDialogId: live.dialogId! })) === 'lost') return 'lost';
  }

  /** An INVITE with no final response seen: ACK a 200 that came meanwhile, else CANCEL it. */
  async #reattachInvite(live: Live, gen: number): Promise<void> {
    const inv = live.invite!;
    const ack = await this.#requests.send('ACK', IN_DIALOG, { stackDialogId: inv.dialogId });
    if (ack === 'lost') return;
    if (ack.ok) return this.#answeredAway(live);
    if (live.cancelAt === null) {
      // Its responses would still go to the old connection: it cannot be followed, only ended.
      const c = await this.#requests.send('CANCEL', inv.uri, { stackTxnId: inv.txn });
      if (c === 'lost') return;
      if (c.ok) {
        live.cancelAt = Date.now();
        live.canceled ??= 'lost';
      } else if (UNKNOWN_TXN.test(c.reason)) {
        // A final response other than 200 came meanwhile (or the server is new): not knowable which.
        this.#log('info', 'INVITE ended while the drachtio connection was down', { call_id: live.callId });
        return this.#finish(live, this.#lost(live));
      }
      // Otherwise refused with nothing sent: a CANCEL of ours before the drop got there (we had
      // given up), or a 200 came since the ACK above. The watch tells which.
    }
    return this.#watchCancel(live, gen);
  }

  /**
   * After our CANCEL, until the INVITE is over: a 200 crossing it is ACKed (and BYEd); the
   * server refusing a further CANCEL as unknown means a final response came (the 487, which it
   * does not pass on), and a further CANCEL of a pending INVITE sends nothing (the stack refuses
   * to cancel twice), so these probes put nothing on the wire.
   */
  async #watchCancel(live: Live, gen: number): Promise<void> {
    const inv = live.invite!;
    const until = Date.now() + CANCEL_WATCH_MS;
    for (let wait = 200; ; wait = Math.min(wait * 2, 4_000)) {
      if (!(await this.#sleep(live, wait)) || gen !== this.#gen) return;
      const ack = await this.#requests.send('ACK', IN_DIALOG, { stackDialogId: inv.dialogId });
      if (ack === 'lost') return;
      if (ack.ok) return this.#answeredAway(live);
      const c = await this.#requests.send('CANCEL', inv.uri, { stackTxnId: inv.txn });
      if (c === 'lost') return;
      if (c.ok) {
        live.cancelAt ??= Date.now();
        live.canceled ??= 'lost';
      } else if (UNKNOWN_TXN.test(c.reason)) {
        // Over. Not after a CANCEL we know went out: how is not knowable.
        if (live.cancelAt === null) return this.#finish(live, this.#lost(live));
        // The server drops an INVITE 32 s after its CANCEL whatever came: past that, nothing is known.
        const timedOut = Date.now() - live.cancelAt >= 32_000;
        return this.#finish(live, { type: 'ended', sip_status: timedOut ? 408 : 487, talk_seconds: 0, reason: gaveUpReason(live) });
      }
      if (Date.now() > until) return this.#finish(live, { type: 'ended', sip_status: 408, talk_seconds: 0, reason: gaveUpReason(live) });
    }
  }

  /** A 200 that came while we could not see it, now ACKed: BYE if we had given up on the call, else take it back. */
  async #answeredAway(live: Live): Promise<void> {
    live.dialogId = live.invite!.dialogId;
    if (live.canceled !== null || live.reported) {
      this.#report(live, { type: 'ended', sip_status: 200, talk_seconds: 0, reason: gaveUpReason(live) });
      // After a CANCEL, drachtio-server BYEs on our ACK itself (its "ACK-BYE"); ours is then refused.
      const a = await this.#bye(live);
      if (a !== 'lost') this.#finish(live);
      return;
    }
    if (live.ringTimer) clearTimeout(live.ringTimer);
    live.ringTimer = null;
    live.answeredAt = Date.now();
    live.emit({ type: 'answered', sip_status: 200 });
    this.#adopt(live);
  }

  /** The call is ours again on this connection; OPTIONS tell us when its far end is gone. */
  #adopt(live: Live, seen = true): void {
    live.detachedAt = null;
    if (seen) live.seenUpAt = Date.now();
    this.#log('info', 'call taken back after the drachtio connection returned', { call_id: live.callId });
    void this.#keepalive(live, this.#gen);
  }

  /**
   * drachtio-server no longer passes this dialog's requests to any client: the far end's BYE is
   * answered 481 and the dialog dropped. An in-dialog OPTIONS every `keepaliveMs` finds out:
   * refused (no dialog) or 481, the far end ended it; 408, or no answer but 5xx for
   * `detachedLimitMs` (sofia answers 503 itself when the far end cannot be reached), it is gone.
   */
  async #keepalive(live: Live, gen: number): Promise<void> {
    while (await this.#sleep(live, this.#opts.keepaliveMs ?? 5_000)) {
      if (gen !== this.#gen || live.reported) return;
      const a = await this.#requests.ask('OPTIONS', IN_DIALOG, { stackDialogId: live.dialogId! });
      if (a === 'lost' || live.reported || live.done) return;
      if ('status' in a && isSignOfLife(a.status)) {
        live.seenUpAt = Date.now();
        continue;
      }
      const gone = 'refused' in a || a.status === 481;
      const unreachable = !gone && (a.status === 408 || Date.now() - live.seenUpAt >= (this.#opts.detachedLimitMs ?? 32_000));
      if (!gone && !unreachable) continue;
      if ('status' in a) void this.#bye(live);
      // Talk time up to the last answer that showed it up.
      return this.#finish(live, gone ? { type: 'ended', sip_status: 200, talk_seconds: talkUntil(live, live.seenUpAt), reason: 'completed' } : this.#lost(live));
    }
  }

  /** Waits for the call (true), unless the wait is ended first by a drop, the call's end or close() (false). */
  #sleep(live: Live, ms: number): Promise<boolean> {
    this.#sleepEnds(live);
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        live.wake = null;
        resolve(true);
      }, ms);
      live.wake = () => {
        clearTimeout(t);
        live.wake = null;
        resolve(false);
      };
    });
  }

  #sleepEnds(live: Live): void {
    live.wake?.();
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
