/**
 * After the drachtio connection is back, each call it carried is taken back or ended on the wire
 * (see `drachtio-trunk.ts`'s header for what a reconnected client can still do): an answered call
 * still up is kept and watched with in-dialog OPTIONS, one hung up meanwhile is BYEd; a ringing
 * call is CANCELed, and a 200 that came or comes for it is ACKed, then BYEd if we had given up on
 * it, else taken back as answered.
 */
import { IN_DIALOG, UNKNOWN_TXN, type Answer, type RequestsById } from './drachtio-requests.ts';
import { gaveUpReason, isSignOfLife, lostEnd, sleepFor, talkUntil, type DrachtioTrunkOptions, type Ended, type Live, type TrunkLog } from './drachtio-calls.ts';

/** After a CANCEL sent on reconnect, how long its outcome is watched for (64×T1 and a margin). */
const CANCEL_WATCH_MS = 34_000;

/** What the take-back uses of the trunk. */
export type ReattachPort = {
  opts: DrachtioTrunkOptions;
  log: TrunkLog;
  requests: RequestsById;
  /** The current connection's generation: bumped on every lost connection. */
  gen: () => number;
  /** BYE by dialog id on the current connection ('lost': the connection went, it stays owed). */
  bye: (live: Live) => Promise<Answer>;
  /** Tells the call's end once. */
  report: (live: Live, e: Ended) => void;
  /** Nothing more to do for the call; `e` is reported if its end was not yet. */
  finish: (live: Live, e?: Ended) => void;
};

/** Takes the call back on the new connection, or ends it on the wire, and reports what happened. */
export async function reattach(t: ReattachPort, live: Live): Promise<void> {
  const gen = t.gen();
  if (live.dialogId !== null) return reattachDialog(t, live, live.answeredAt !== null);
  return reattachInvite(t, live, gen);
}

/** An answered call: BYE if it was hung up meanwhile (or already reported), else take it back if its far end still has it. */
async function reattachDialog(t: ReattachPort, live: Live, checkAck = true): Promise<void> {
  if (checkAck && live.invite && (await ackIfLost(t, live)) === 'lost') return;
  if (live.byeWanted || live.reported) {
    const a = await t.bye(live);
    if (a === 'lost') return;
    const wasUp = 'status' in a && a.status < 300;
    return t.finish(live, wasUp ? { type: 'ended', sip_status: 200, talk_seconds: talkUntil(live, Date.now()), reason: 'hangup' } : lostEnd(live));
  }
  const a = await t.requests.ask('OPTIONS', IN_DIALOG, { stackDialogId: live.dialogId! });
  if (a === 'lost' || live.done) return;
  if ('status' in a && a.status !== 481 && a.status !== 408) {
    // Hung up while the OPTIONS was out: BYE now.
    if (live.byeWanted) return reattachDialog(t, live, false);
    return adopt(t, live, isSignOfLife(a.status));
  }
  // The server no longer has the dialog (the far end's BYE was answered 481 while we were away,
  // or the server is a new one), or the far end no longer has it: the call ended unseen.
  t.log('info', 'call ended while the drachtio connection was down', { call_id: live.callId, answer: 'status' in a ? a.status : a.refused });
  if ('status' in a) void t.bye(live);
  t.finish(live, lostEnd(live));
}

/**
 * The ACK srf wrote for the 200 may have died with the connection. drachtio-server keeps the
 * INVITE's transaction until the ACK, so a CANCEL of it tells: refused as unknown once ACKed,
 * refused otherwise while the 200 waits (a completed INVITE cannot be cancelled: nothing is
 * sent). Only then is the ACK sent again: a far end may take a second ACK for an error (sipp
 * aborts the call).
 */
async function ackIfLost(t: ReattachPort, live: Live): Promise<'lost' | void> {
  const inv = live.invite!;
  const c = await t.requests.send('CANCEL', inv.uri, { stackTxnId: inv.txn });
  if (c === 'lost') return c;
  if (c.ok || UNKNOWN_TXN.test(c.reason)) return;
  t.log('warn', 'the ACK of an answered call was lost with the drachtio connection: sent again', { call_id: live.callId });
  if ((await t.requests.send('ACK', IN_DIALOG, { stackDialogId: live.dialogId! })) === 'lost') return 'lost';
}

/** An INVITE with no final response seen: ACK a 200 that came meanwhile, else CANCEL it. */
async function reattachInvite(t: ReattachPort, live: Live, gen: number): Promise<void> {
  const inv = live.invite!;
  const ack = await t.requests.send('ACK', IN_DIALOG, { stackDialogId: inv.dialogId });
  if (ack === 'lost') return;
  if (ack.ok) return answeredAway(t, live);
  if (live.cancelAt === null) {
    // Its responses would still go to the old connection: it cannot be followed, only ended.
    const c = await t.requests.send('CANCEL', inv.uri, { stackTxnId: inv.txn });
    if (c === 'lost') return;
    if (c.ok) {
      live.cancelAt = Date.now();
      live.canceled ??= 'lost';
    } else if (UNKNOWN_TXN.test(c.reason)) {
      // A final response other than 200 came meanwhile (or the server is new): not knowable which.
      t.log('info', 'INVITE ended while the drachtio connection was down', { call_id: live.callId });
      return t.finish(live, lostEnd(live));
    }
    // Otherwise refused with nothing sent: a CANCEL of ours before the drop got there (we had
    // given up), or a 200 came since the ACK above. The watch tells which.
  }
  return watchCancel(t, live, gen);
}

/**
 * After our CANCEL, until the INVITE is over: a 200 crossing it is ACKed (and BYEd); the
 * server refusing a further CANCEL as unknown means a final response came (the 487, which it
 * does not pass on), and a further CANCEL of a pending INVITE sends nothing (the stack refuses
 * to cancel twice), so these probes put nothing on the wire.
 */
async function watchCancel(t: ReattachPort, live: Live, gen: number): Promise<void> {
  const inv = live.invite!;
  const until = Date.now() + CANCEL_WATCH_MS;
  for (let wait = 200; ; wait = Math.min(wait * 2, 4_000)) {
    if (!(await sleepFor(live, wait)) || gen !== t.gen()) return;
    const ack = await t.requests.send('ACK', IN_DIALOG, { stackDialogId: inv.dialogId });
    if (ack === 'lost') return;
    if (ack.ok) return answeredAway(t, live);
    const c = await t.requests.send('CANCEL', inv.uri, { stackTxnId: inv.txn });
    if (c === 'lost') return;
    if (c.ok) {
      live.cancelAt ??= Date.now();
      live.canceled ??= 'lost';
    } else if (UNKNOWN_TXN.test(c.reason)) {
      // Over. Not after a CANCEL we know went out: how is not knowable.
      if (live.cancelAt === null) return t.finish(live, lostEnd(live));
      // The server drops an INVITE 32 s after its CANCEL whatever came: past that, nothing is known.
      const timedOut = Date.now() - live.cancelAt >= 32_000;
      return t.finish(live, { type: 'ended', sip_status: timedOut ? 408 : 487, talk_seconds: 0, reason: gaveUpReason(live) });
    }
    if (Date.now() > until) return t.finish(live, { type: 'ended', sip_status: 408, talk_seconds: 0, reason: gaveUpReason(live) });
  }
}

/** A 200 that came while we could not see it, now ACKed: BYE if we had given up on the call, else take it back. */
async function answeredAway(t: ReattachPort, live: Live): Promise<void> {
  live.dialogId = live.invite!.dialogId;
  if (live.canceled !== null || live.reported) {
    t.report(live, { type: 'ended', sip_status: 200, talk_seconds: 0, reason: gaveUpReason(live) });
    // After a CANCEL, drachtio-server BYEs on our ACK itself (its "ACK-BYE"); ours is then refused.
    const a = await t.bye(live);
    if (a !== 'lost') t.finish(live);
    return;
  }
  if (live.ringTimer) clearTimeout(live.ringTimer);
  live.ringTimer = null;
  live.answeredAt = Date.now();
  live.emit({ type: 'answered', sip_status: 200 });
  adopt(t, live);
}

/** The call is ours again on this connection; OPTIONS tell us when its far end is gone. */
function adopt(t: ReattachPort, live: Live, seen = true): void {
  live.detachedAt = null;
  if (seen) live.seenUpAt = Date.now();
  t.log('info', 'call taken back after the drachtio connection returned', { call_id: live.callId });
  void keepalive(t, live, t.gen());
}

/**
 * drachtio-server no longer passes this dialog's requests to any client: the far end's BYE is
 * answered 481 and the dialog dropped. An in-dialog OPTIONS every `keepaliveMs` finds out:
 * refused (no dialog) or 481, the far end ended it; 408, or no answer but 5xx for
 * `detachedLimitMs` (sofia answers 503 itself when the far end cannot be reached), it is gone.
 */
async function keepalive(t: ReattachPort, live: Live, gen: number): Promise<void> {
  while (await sleepFor(live, t.opts.keepaliveMs ?? 5_000)) {
    if (gen !== t.gen() || live.reported) return;
    const a = await t.requests.ask('OPTIONS', IN_DIALOG, { stackDialogId: live.dialogId! });
    if (a === 'lost' || live.reported || live.done) return;
    if ('status' in a && isSignOfLife(a.status)) {
      live.seenUpAt = Date.now();
      continue;
    }
    const gone = 'refused' in a || a.status === 481;
    const unreachable = !gone && (a.status === 408 || Date.now() - live.seenUpAt >= (t.opts.detachedLimitMs ?? 32_000));
    if (!gone && !unreachable) continue;
    if ('status' in a) void t.bye(live);
    // Talk time up to the last answer that showed it up.
    return t.finish(live, gone ? { type: 'ended', sip_status: 200, talk_seconds: talkUntil(live, live.seenUpAt), reason: 'completed' } : lostEnd(live));
  }
}
