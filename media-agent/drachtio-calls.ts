/**
 * A call on the drachtio trunk as `drachtio-trunk.ts` keeps it (`Live`): where its INVITE and
 * dialog are at drachtio-server, whether we gave up on it, whether its connection is gone, and
 * the small rules read off that record (the end reason of a call given up or lost, talk time, the
 * dialog id the server gives a UAC dialog, what counts as a sign of life, a wait its connection's
 * drop ends); and the trunk's settings.
 */
import type { TrunkEvent } from './trunk.ts';

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
  /**
   * How long a call may go without a sign of life before it is given up (default 32 s, 64×T1: a
   * far end that answered meanwhile stops waiting for our ACK then): calls whose admin connection
   * is not back by then are reported `trunk_lost` (and ended on the wire once it returns); a call
   * taken back whose far end answers its OPTIONS only with 5xx for as long is ended.
   */
  detachedLimitMs?: number;
  /** How often a call taken back after a reconnect is checked with an in-dialog OPTIONS (default 5 s). */
  keepaliveMs?: number;
  log?: TrunkLog;
};

/** The INVITE as drachtio-srf hands it to cbRequest: the request the server sent. */
export type InviteReq = { stackTxnId: string; uri: string; get: (h: string) => string; getParsedHeader: (h: 'from') => { params?: { tag?: string } } };
/** The dialog createUAC resolves with. */
export type UacDialog = { id: string; on: (event: 'destroy', fn: () => void) => unknown; removeAllListeners: () => unknown };

export type GaveUp = 'timeout' | 'hangup' | 'lost';

export type Live = {
  callId: string;
  emit: (e: TrunkEvent) => void;
  /** The connection (generation) the call was placed on: srf's objects for it belong to it. */
  gen: number;
  /** The INVITE as drachtio-server sent it, from cbRequest: its transaction, request URI and the id its dialog will have. */
  invite: { txn: string; uri: string; dialogId: string } | null;
  /** srf's dialog, while the call is on the connection that answered it. */
  dialog: UacDialog | null;
  /** The dialog's id at drachtio-server, once there is a dialog. */
  dialogId: string | null;
  placed: boolean;
  answeredAt: number | null;
  /** The last moment the call was known up (answer; on the connection; an OPTIONS answered). */
  seenUpAt: number;
  /** Why we gave up on the INVITE; `lost`: it could no longer be followed after a reconnect. */
  canceled: GaveUp | null;
  /** drachtio-server took a CANCEL for the INVITE (a later one is refused without a word on the wire). */
  cancelAt: number | null;
  /** A BYE is owed: asked while the connection was down, or lost with it. */
  byeWanted: boolean;
  /** Since when the connection that carried the call is gone; null once it is on the current one. */
  detachedAt: number | null;
  ringTimer: NodeJS.Timeout | null;
  guardTimer: NodeJS.Timeout | null;
  /** A wait of the call's probe or keepalive; `wake` ends it early (false). */
  wake: (() => void) | null;
  /** Its `ended` went out (the client forgets it); `done`: nothing more to do on the wire either. */
  reported: boolean;
  done: boolean;
};

export type Ended = Extract<TrunkEvent, { type: 'ended' }>;

/** An answer to an in-dialog OPTIONS that shows the far end has the call: any but 408, 481 and 5xx (which our own stack makes when it cannot reach it). */
export function isSignOfLife(status: number): boolean {
  return status !== 408 && status !== 481 && status < 500;
}

export function gaveUpReason(live: Live): Ended['reason'] {
  return live.canceled === 'timeout' ? 'no_answer' : live.canceled === 'hangup' ? 'canceled' : 'trunk_lost';
}

export function talkUntil(live: Live, until: number): number {
  return live.answeredAt === null ? 0 : Math.max(0, Math.round((until - live.answeredAt) / 100) / 10);
}

/** drachtio-server's id of a dialog it opened as UAC: `<Call-ID>;from-tag=<our tag>` (src/sip-dialog.hpp; srf's findDialogByCallIDAndFromTag). */
export function dialogIdOf(req: InviteReq): string {
  return `${req.get('Call-ID')};from-tag=${req.getParsedHeader('from').params?.tag ?? ''}`;
}

/** drachtio-srf rejects createUAC with a SipError carrying the final response's `status`. */
export function sipStatusOf(err: unknown): number | null {
  const s = (err as { status?: unknown } | null)?.status;
  return typeof s === 'number' ? s : null;
}

export function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** trunk_lost, talk time up to the last moment the call was known up. */
export function lostEnd(live: Live): Ended {
  return { type: 'ended', sip_status: live.answeredAt !== null ? 200 : 503, talk_seconds: talkUntil(live, live.seenUpAt), reason: 'trunk_lost' };
}

/** Waits for the call (true), unless the wait is ended first by a drop, the call's end or close() (false). */
export function sleepFor(live: Live, ms: number): Promise<boolean> {
  wake(live);
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

/** Ends the call's wait under way, if any (`sleepFor` answers false). */
export function wake(live: Live): void {
  live.wake?.();
}
