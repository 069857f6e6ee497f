/**
 * The built-in scorer: used when no AI upstream is configured for QA. It judges only what the
 * platform itself knows about the call (answered, talk seconds, dropped, the hand-over, the
 * person's saved result) and, for an imported recording with no call, the recording's length. It
 * is deterministic: the same data always gives the same answers. Calls carry no transcript lines
 * in this platform (the media agent reports none), so criteria about what was said are answered
 * "not applicable", with a justification saying why; so is any criterion it has no rule for (a
 * company's own criteria), and any whose data does not exist. Its rules, per criterion of the
 * default scorecard (docs/recordings-and-qa.md, "The QA Bot"):
 *
 * - `connected`: full points when the call was answered with talk time, else 0.
 * - `conversation`: talk seconds (the recording's length without a call): 60 or more full points,
 *   20–59 half (rounded down), under 20 none.
 * - `not_dropped`: an answered call not lost without a handler full points, a dropped one 0;
 *   n/a when never answered.
 * - `outcome_recorded`: full points when the call's person has a result saved at or after the
 *   call started, else 0; n/a for a call to no person.
 * - `handover`: bridged or completed full points, asked for and never connected 0; n/a when none
 *   was asked for.
 * - `greeting`, `recording_disclosure`: n/a (no transcript).
 */
import type { Store } from '../infra/db/store.ts';
import type { Answer, Criterion } from './scorecard.ts';

/** The rules' version, kept as the review's `model`. */
export const BUILTIN_MODEL = 'vd-builtin-1';

/** What the built-in scorer reads of a call. */
export type CallFacts = {
  answered: boolean;
  talk_seconds: number;
  dropped: boolean;
  transfer_state: 'requested' | 'bridged' | 'completed' | null;
  person_id: string | null;
  /** The person's saved result when it was saved at or after the call started. */
  disposition_after_call: string | null;
};

/** The facts of the call `callId` of the company; null when there is no such call. */
export async function callFacts(store: Store, tenantId: string, callId: string): Promise<CallFacts | null> {
  const row = await store.db
    .selectFrom('calls as c')
    .leftJoin('people as p', 'p.id', 'c.person_id')
    .select(['c.answered_at', 'c.talk_seconds', 'c.dropped', 'c.transfer_state', 'c.person_id', 'c.started_at', 'p.disposition', 'p.result_at'])
    .where('c.id', '=', callId)
    .where('c.tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) return null;
  return {
    answered: row.answered_at !== null,
    talk_seconds: row.talk_seconds,
    dropped: row.dropped,
    transfer_state: row.transfer_state,
    person_id: row.person_id,
    disposition_after_call: row.disposition && row.result_at && row.result_at >= row.started_at ? row.disposition : null,
  };
}

type Judged = { points: number; not_applicable: boolean; justification: string };

const na = (justification: string): Judged => ({ points: 0, not_applicable: true, justification });
const pts = (points: number, justification: string): Judged => ({ points, not_applicable: false, justification });

/** The answers of the built-in scorer for `criteria`, from the call's facts and the recording's length. */
export function builtinAnswers(criteria: readonly Criterion[], call: CallFacts | null, recordingSeconds: number | null): Answer[] {
  return criteria.map((c) => {
    const j = judge(c, call, recordingSeconds);
    return { criterion: c.key, points: j.points, max_points: c.weight, not_applicable: j.not_applicable, justification: j.justification };
  });
}

function judge(c: Criterion, call: CallFacts | null, recordingSeconds: number | null): Judged {
  const noCall = 'the recording has no call on this platform to judge it by';
  switch (c.key) {
    case 'connected':
      if (!call) return na(noCall);
      if (!call.answered) return pts(0, 'the call was not answered');
      return call.talk_seconds > 0 ? pts(c.weight, `answered, ${call.talk_seconds} s of talk`) : pts(0, 'answered with no talk time');
    case 'conversation': {
      const seconds = call ? call.talk_seconds : recordingSeconds === null ? null : Math.floor(recordingSeconds);
      if (seconds === null) return na('neither talk time nor the recording’s length is known');
      const what = call ? 'talk' : 'recording';
      if (seconds >= 60) return pts(c.weight, `${seconds} s of ${what} (60 s or more)`);
      if (seconds >= 20) return pts(Math.floor(c.weight / 2), `${seconds} s of ${what} (20–59 s: half)`);
      return pts(0, `${seconds} s of ${what} (under 20 s)`);
    }
    case 'not_dropped':
      if (!call) return na(noCall);
      if (!call.answered) return na('the call was never answered, so it could not be dropped');
      return call.dropped ? pts(0, 'the answered call was lost without anyone to handle it') : pts(c.weight, 'the answered call was handled');
    case 'outcome_recorded':
      if (!call) return na(noCall);
      if (!call.person_id) return na('the call was to a number, not to a person of a list');
      return call.disposition_after_call ? pts(c.weight, `result saved: ${call.disposition_after_call}`) : pts(0, 'no result was saved for the person after the call');
    case 'handover':
      if (!call) return na(noCall);
      if (call.transfer_state === null) return na('no hand-over was asked for');
      return call.transfer_state === 'requested' ? pts(0, 'a hand-over was asked for and never connected') : pts(c.weight, `the hand-over was ${call.transfer_state}`);
    case 'greeting':
    case 'recording_disclosure':
      return na('no transcript: the built-in scorer cannot judge what was said');
    default:
      return na('the built-in scorer has no rule for this criterion');
  }
}
