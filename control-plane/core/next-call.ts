/**
 * A person's `next_call_at`, as their reads show it: the first instant at or after
 * max(now, next_attempt_at) when the legal window of their region is open in every one of their
 * zones (`timezone_used`). Null when nobody will call them: not callable (or not checked yet),
 * done, closed, or in a call now. A campaign's own window narrows it further when it dials them
 * (a person's list may be dialed by several campaigns); this is the legal floor.
 */
import type { PersonCheck, PersonStatus } from '../infra/db/schema/index.ts';
import { legalRuleFor, nextOpening, windowFor, type LegalRules } from '../compliance/calling-window.ts';

/** What `next_call_at` reads of a person; `zones` and `region` are their `callee_zones` row's. */
export type CallTiming = {
  status: PersonStatus;
  check: PersonCheck;
  closed_at: Date | null;
  next_attempt_at: Date | null;
  zones: string[] | null;
  region: string | null;
};

/** `next_call_at` for the people of one read, all at `now` under `rules`. */
export class NextCalls {
  readonly #rules: LegalRules;
  readonly #now: number;
  /** By zone set, for people due now (most of a page): each set's opening worked out once. */
  readonly #fromNow = new Map<string, number | null>();

  constructor(rules: LegalRules, now: number) {
    this.#rules = rules;
    this.#now = now;
  }

  /** The person's next call as ISO time, or null (see the module header). */
  of(p: CallTiming): string | null {
    if (p.check !== 'callable' || (p.status !== 'new' && p.status !== 'due') || p.closed_at || !p.zones || !p.region) return null;
    const due = p.next_attempt_at?.getTime() ?? 0;
    let at: number | null;
    if (due > this.#now) at = this.#opening(p.zones, p.region, due);
    else {
      const key = `${p.zones.join(',')}|${p.region}`;
      at = this.#fromNow.get(key) ?? null;
      if (!this.#fromNow.has(key)) this.#fromNow.set(key, (at = this.#opening(p.zones, p.region, this.#now)));
    }
    return at === null ? null : new Date(at).toISOString();
  }

  #opening(zones: string[], region: string, from: number): number | null {
    return nextOpening(zones, windowFor(null, legalRuleFor(this.#rules, region)), from);
  }
}
