/**
 * The SIP adapter on drachtio-srf: the agent is a drachtio application connected (outbound TCP)
 * to a drachtio-server in front of the SIP trunk. Written against drachtio-srf's documented API
 * and type-checked only: there is no drachtio-server where the tests run (docs/agent-protocol.md).
 *
 * - placing: `srf.createUAC('sip:<to>@<trunk>', {headers, localSdp}, {cbRequest, cbProvisional})`;
 *   `cbRequest` hands over the INVITE in flight, kept to CANCEL it.
 * - ring timeout and hang-up before answer: `req.cancel()`; the INVITE then fails with 487.
 * - answered: createUAC resolves with the dialog; a BYE from the far end fires `destroy`.
 * - hang-up after answer: `dialog.destroy()` sends the BYE.
 *
 * Media (RTP) is not handled here: the offer is a fixed SDP from the settings, the place where a
 * media server (or the bot's media bridge) will plug in.
 */
import Srf from 'drachtio-srf';
import type { Trunk, TrunkCall, TrunkEvent } from './trunk.ts';

export type DrachtioTrunkOptions = {
  host: string;
  port: number;
  secret: string;
  /** Host (and port) of the SIP trunk: calls go to sip:<number>@<trunkHost>. */
  trunkHost: string;
  /** The SDP offered in the INVITE. */
  localSdp: string;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
};

type Live = {
  req: Srf.SrfRequest | null;
  dialog: Srf.Dialog | null;
  ringTimer: NodeJS.Timeout | null;
  answeredAt: number | null;
  canceled: 'timeout' | 'hangup' | null;
  ended: boolean;
  emit: (e: TrunkEvent) => void;
};

export class DrachtioTrunk implements Trunk {
  readonly #opts: DrachtioTrunkOptions;
  readonly #srf = new Srf();
  readonly #calls = new Map<string, Live>();

  constructor(opts: DrachtioTrunkOptions) {
    this.#opts = opts;
    this.#srf.on('error', (err: Error) => opts.log?.('drachtio connection error', { err: err.message }));
  }

  async start(): Promise<void> {
    // srf reconnects by itself after a drop; connect() resolves on the first connection.
    await this.#srf.connect({ host: this.#opts.host, port: this.#opts.port, secret: this.#opts.secret });
  }

  originate(call: TrunkCall, onEvent: (event: TrunkEvent) => void): void {
    if (this.#calls.has(call.call_id)) return;
    const live: Live = { req: null, dialog: null, ringTimer: null, answeredAt: null, canceled: null, ended: false, emit: onEvent };
    this.#calls.set(call.call_id, live);
    const end = (e: Extract<TrunkEvent, { type: 'ended' }>) => {
      if (live.ended) return;
      live.ended = true;
      if (live.ringTimer) clearTimeout(live.ringTimer);
      this.#calls.delete(call.call_id);
      onEvent(e);
    };
    const uri = `sip:${call.to}@${this.#opts.trunkHost}`;
    const headers: Record<string, string> = {
      From: `<sip:${call.from}@${this.#opts.trunkHost}>`,
      'X-VD-Call-Id': call.call_id,
    };
    this.#srf
      .createUAC(
        uri,
        { headers, localSdp: this.#opts.localSdp },
        {
          cbRequest: (req: Srf.SrfRequest) => {
            live.req = req;
            onEvent({ type: 'placed', sip_status: 100 });
            live.ringTimer = setTimeout(() => this.#cancel(live, 'timeout'), call.ring_timeout_s * 1000);
          },
        },
      )
      .then((dialog: Srf.Dialog) => {
        if (live.ringTimer) clearTimeout(live.ringTimer);
        live.dialog = dialog;
        if (live.ended || live.canceled) {
          // The 200 OK crossed our CANCEL: the call exists, so it gets a BYE at once.
          dialog.destroy();
          return end({ type: 'ended', sip_status: 487, talk_seconds: 0, reason: live.canceled === 'timeout' ? 'no_answer' : 'canceled' });
        }
        live.answeredAt = Date.now();
        onEvent({ type: 'answered', sip_status: 200 });
        // The far end's BYE.
        dialog.on('destroy', () => end({ type: 'ended', sip_status: 200, talk_seconds: talkSeconds(live), reason: 'completed' }));
      })
      .catch((err: unknown) => {
        const status = sipStatusOf(err);
        if (live.req === null) onEvent({ type: 'placed', sip_status: 100 });
        if (live.canceled || status === 487) {
          return end({ type: 'ended', sip_status: 487, talk_seconds: 0, reason: live.canceled === 'timeout' ? 'no_answer' : 'canceled' });
        }
        if (status === 486 || status === 600) return end({ type: 'ended', sip_status: status, talk_seconds: 0, reason: 'busy' });
        if (status === 408 || status === 480) return end({ type: 'ended', sip_status: status, talk_seconds: 0, reason: 'no_answer' });
        this.#opts.log?.('INVITE failed', { call_id: call.call_id, status, err: err instanceof Error ? err.message : String(err) });
        end({ type: 'ended', sip_status: status ?? 500, talk_seconds: 0, reason: 'failed' });
      });
  }

  #cancel(live: Live, why: 'timeout' | 'hangup'): void {
    if (live.ended || live.canceled || live.dialog) return;
    live.canceled = why;
    // The INVITE then fails with 487 Request Terminated (handled in originate's catch).
    live.req?.cancel((err: unknown) => {
      if (err) this.#opts.log?.('CANCEL failed', { err: err instanceof Error ? err.message : String(err) });
    });
  }

  hangup(callId: string): void {
    const live = this.#calls.get(callId);
    if (!live || live.ended) return;
    if (!live.dialog) return this.#cancel(live, 'hangup');
    const dialog = live.dialog;
    live.ended = true;
    this.#calls.delete(callId);
    dialog.destroy();
    live.emit({ type: 'ended', sip_status: 200, talk_seconds: talkSeconds(live), reason: 'hangup' });
  }

  async close(): Promise<void> {
    this.#srf.disconnect();
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
