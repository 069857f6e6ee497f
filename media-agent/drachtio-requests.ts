/**
 * Requests by id on drachtio-srf's current admin connection, for the drachtio trunk
 * (media-agent/drachtio-trunk.ts): a CANCEL by the INVITE's transaction id, an ACK, BYE or OPTIONS
 * by the dialog id. drachtio-server takes them from any connected client, the one that placed the
 * call or a later one (src/client.cpp, src/sip-dialog-controller.cpp), while drachtio-srf's own
 * request and dialog objects stay bound to the socket the call came on.
 *
 * `srf.request(uri, {method, stackTxnId | stackDialogId}, cb)` calls back once the server sent the
 * request (its echo) or refused it (NOK, with a reason); the far end's responses then come to the
 * sent request as `response`. Each answer here also says when the connection went first.
 */
import type Srf from 'drachtio-srf';

/** A request srf.request sent: the server's echo; the far end's responses come as `response`. */
type SentRequest = { on: (event: 'response', fn: (res: { status: number }) => void) => unknown };
type SrfSend = (uri: string, opts: { method: string; stackTxnId?: string; stackDialogId?: string }, cb: (err: (Error & { code?: string }) | null, req?: SentRequest) => void) => unknown;
type Ids = { stackTxnId?: string; stackDialogId?: string };

/** What became of a request: the server sent it, refused it (its reason, srf's code), or the connection went first. */
export type Sent = { ok: true; req: SentRequest } | { ok: false; reason: string; code?: string } | 'lost';
/** The far end's final status, the server's refusal, or the connection gone first. */
export type Answer = { status: number } | { refused: string; code?: string } | 'lost';

/** The request URI for an in-dialog request: drachtio-server then sends it to the dialog's remote target. */
export const IN_DIALOG = 'sip:placeholder';
/** drachtio-server's refusal of a CANCEL for an INVITE it no longer has (a final response came, the 200 was ACKed, or the server is new). */
export const UNKNOWN_TXN = /unknown transaction/i;

export class RequestsById {
  readonly #srf: Srf;
  readonly #connected: () => boolean;
  /** Requests waiting for the server or the far end: told 'lost' when the connection goes. */
  readonly #waiting = new Set<() => void>();

  constructor(srf: Srf, connected: () => boolean) {
    this.#srf = srf;
    this.#connected = connected;
  }

  /**
   * Sends a request and resolves once the server has sent it or refused it. `onFinal` gets the far
   * end's final status: it is attached before anything else runs, since drachtio-server may write
   * the response in the same read as its echo of the request (seen with a real one).
   */
  send(method: string, uri: string, ids: Ids, onFinal?: (status: number) => void): Promise<Sent> {
    if (!this.#connected()) return Promise.resolve('lost');
    return new Promise<Sent>((resolve) => {
      const lost = () => settle('lost');
      const settle = (s: Sent) => {
        this.#waiting.delete(lost);
        resolve(s);
      };
      this.#waiting.add(lost);
      try {
        (this.#srf.request as unknown as SrfSend).call(this.#srf, uri, { method, ...ids }, (err, req) => {
          if (err?.code === 'ESOCKETDESTROYED') return settle('lost');
          if (err || !req) return settle({ ok: false, reason: err instanceof Error ? err.message : String(err), ...(err?.code ? { code: err.code } : {}) });
          if (onFinal) req.on('response', (res) => res.status >= 200 && onFinal(res.status));
          settle({ ok: true, req });
        });
      } catch {
        // srf throws when it has no socket at all.
        settle('lost');
      }
    });
  }

  /** Sends a request and resolves with the far end's final status (or the server's refusal). */
  ask(method: string, uri: string, ids: Ids): Promise<Answer> {
    return new Promise<Answer>((resolve) => {
      let answered = false;
      const lost = () => {
        this.#waiting.delete(lost);
        resolve('lost');
      };
      void this.send(method, uri, ids, (status) => {
        answered = true;
        this.#waiting.delete(lost);
        resolve({ status });
      }).then((s) => {
        if (s === 'lost') return resolve(s);
        if (!s.ok) return resolve({ refused: s.reason, ...(s.code ? { code: s.code } : {}) });
        // Sent: wait for the final status (unless it came with the echo), or the connection's loss.
        if (!answered) this.#waiting.add(lost);
      });
    });
  }

  /** The connection is gone: nothing more will come for what is waiting. */
  connectionLost(): void {
    for (const w of [...this.#waiting]) w();
  }
}
