/**
 * The operators' change of the legal calling rules (`PUT /api/platform/dialing/rules` and the
 * Dialing page's form): the whole set replaced at once, one change at a time, audited. A change
 * is the event `vd.platform.dialing_rules_changed` `{actor, before, after}` (the rules in the
 * API's shape), written in the change's transaction; the audit consumer makes it the platform
 * audit line. Rules sent as they already are change nothing and record nothing. The dialers
 * re-read the rules every 10 s (`dialer/calling-hours.ts`), so a change holds everywhere within
 * that.
 */
import { sql } from 'kysely';
import { isDeepStrictEqual } from 'node:util';
import type { Who } from '../../shared/who.ts';
import type { Store } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { parseClock } from './calling-window.ts';
import { readLegalRules, rulesBody, writeLegalRules, type LegalRulesBody } from './legal-rules.ts';

/** The legal rules as the API reads them. */
export async function legalRules(store: Store): Promise<LegalRulesBody> {
  return rulesBody(await readLegalRules(store.db));
}

/**
 * Replaces the legal rules with `body` (already checked with `LegalRulesBody`) on behalf of `by`;
 * answers the rules now in force and whether they changed.
 */
export async function changeLegalRules(store: Store, by: Who, body: LegalRulesBody): Promise<{ changed: boolean; rules: LegalRulesBody }> {
  return store.transaction(async (tx) => {
    // One change at a time: two operators' PUTs cannot interleave their delete and insert, and
    // each one's `before` is what the other left.
    await sql`lock table dialing_rules in share row exclusive mode`.execute(tx);
    const before = rulesBody(await readLegalRules(tx));
    const wanted = rulesBody({
      default: { region: '*', ...ruleOf(body.default) },
      regions: new Map(body.regions.map((r) => [r.region, { region: r.region, ...ruleOf(r) }])),
    });
    if (isDeepStrictEqual(before, wanted)) return { changed: false, rules: before };
    await writeLegalRules(tx, body, by.id);
    const after = rulesBody(await readLegalRules(tx));
    await emit(tx, [{ subject: 'vd.platform.dialing_rules_changed', tenant_id: null, data: { actor: by, before, after } }]);
    return { changed: true, rules: after };
  });
}

/** A body row as minutes (the shape `rulesBody` formats back), so a comparison ignores order. */
function ruleOf(r: { start: string; end: string; max_calls_per_day: number | null }) {
  return { startMin: parseClock(r.start)!, endMin: parseClock(r.end)!, maxCallsPerDay: r.max_calls_per_day };
}
