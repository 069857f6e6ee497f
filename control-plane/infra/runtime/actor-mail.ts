/**
 * Events for actors another instance owns travel as requests over the coordinator: to the owner's
 * inbox (`cp.actor.inbox.<instance>`), with the answer coming back on the asker's reply channel
 * (`cp.actor.reply.<instance>`), matched by the request id. A request not answered within the
 * wait is answered null; the caller asks again with the same id (so the owner answers it once).
 */
import type { Coordinator } from '../coordination/coordinator.ts';
import { CHANNELS } from '../coordination/channels.ts';
import { lastingSubscribe, type LastingSubscription } from '../coordination/lasting-subscription.ts';
import type { ActorEvent, ActorReply } from './definition.ts';
import { ignore } from '../../../shared/errors.ts';

/** One actor's event (`id`), or the same event for several actors of a kind (`ids`). */
export type ActorRequest = { req: string; kind: string; id: string; event: ActorEvent } | { req: string; kind: string; ids: string[]; event: ActorEvent };

/** A request as it travels, with the instance to answer. */
export type InboxMessage = ActorRequest & { from: string };

/** The answer to one (`reply`) or to several (`replies`, by id); null: not applied there. */
export type ReplyMessage = { req: string; reply?: ActorReply | null; replies?: Record<string, ActorReply | null> };

export class ActorMail {
  readonly #coordinator: Coordinator;
  readonly #me: string;
  readonly #waitMs: number;
  readonly #waiting = new Map<string, (r: ReplyMessage) => void>();
  #subs: LastingSubscription[] = [];

  constructor(coordinator: Coordinator, instanceId: string, waitMs: number) {
    this.#coordinator = coordinator;
    this.#me = instanceId;
    this.#waitMs = waitMs;
  }

  /** Listens for requests to this instance (`onRequest` answers them) and for its answers. */
  start(onRequest: (msg: InboxMessage) => Promise<ReplyMessage>): void {
    this.#subs.push(
      lastingSubscribe(this.#coordinator, CHANNELS.actorInbox(this.#me), (raw) => {
        const msg = JSON.parse(raw) as InboxMessage;
        // A request that fails to be answered is asked again by its sender after the wait.
        void onRequest(msg)
          .then((answer) => this.#coordinator.publish(CHANNELS.actorReply(msg.from), JSON.stringify(answer)))
          .catch(ignore('an unanswered request is asked again by its sender after its wait'));
      }),
    );
    this.#subs.push(
      lastingSubscribe(this.#coordinator, CHANNELS.actorReply(this.#me), (raw) => {
        const msg = JSON.parse(raw) as ReplyMessage;
        this.#waiting.get(msg.req)?.(msg);
      }),
    );
  }

  async stop(): Promise<void> {
    for (const sub of this.#subs) await sub.stop();
  }

  /** Sends the request to `holder`'s inbox; its answer, or null after the wait. */
  async request(holder: string, msg: ActorRequest): Promise<ReplyMessage | null> {
    const got = new Promise<ReplyMessage | null>((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(msg.req);
        resolve(null);
      }, this.#waitMs);
      this.#waiting.set(msg.req, (r) => {
        clearTimeout(timer);
        this.#waiting.delete(msg.req);
        resolve(r);
      });
    });
    await this.#coordinator.publish(CHANNELS.actorInbox(holder), JSON.stringify({ ...msg, from: this.#me } satisfies InboxMessage)).catch(ignore('a request not delivered goes unanswered; the wait below ends it'));
    return got;
  }
}

/**
 * The answers to requests already taken, by request id, so a re-sent request (the asker timed out
 * and asked again with the same id) is answered once rather than applied twice. An answer that
 * says the request was not applied (`forget` true: the actor was given up first) is dropped, so it
 * can be applied when sent again, here or on the actor's next owner. Kept two minutes, and swept
 * only past a thousand entries.
 */
export class AnswerMemo<T> {
  readonly #answers = new Map<string, { reply: Promise<T>; at: number }>();
  readonly #forget: (answer: T) => boolean;

  constructor(forget: (answer: T) => boolean) {
    this.#forget = forget;
  }

  get(req: string): Promise<T> | undefined {
    return this.#answers.get(req)?.reply;
  }

  remember(req: string, reply: Promise<T>): void {
    const entry = { reply, at: Date.now() };
    this.#answers.set(req, entry);
    reply.then(
      (r) => {
        if (this.#forget(r) && this.#answers.get(req) === entry) this.#answers.delete(req);
      },
      () => {},
    );
    if (this.#answers.size > 1000) {
      // Oldest first (a Map keeps insertion order): only the expired ones are visited.
      const old = Date.now() - 120_000;
      for (const [k, v] of this.#answers) {
        if (v.at >= old) break;
        this.#answers.delete(k);
      }
    }
  }
}
