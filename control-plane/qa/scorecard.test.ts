/** The QA Bot's arithmetic, the built-in scorer's rules at their edges, and the strict check of a model's answer. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { builtinAnswers, type CallFacts } from './builtin-scorer.ts';
import { AiScoringError, modelAnswers } from './ai-scorer.ts';
import { DEFAULT_SCORECARD, percentage, tally, type Answer, type Criterion } from './scorecard.ts';

const t = suite('qa scorecard');

const card: Criterion[] = [
  { key: 'a', title: 'A', description: 'a', weight: 10, critical: true, allow_na: false },
  { key: 'b', title: 'B', description: 'b', weight: 20, critical: false, allow_na: true },
  { key: 'c', title: 'C', description: 'c', weight: 2, critical: false, allow_na: true },
];
const ans = (criterion: string, points: number, max: number, na = false): Answer => ({ criterion, points, max_points: max, not_applicable: na, justification: 'x' });

t('percentage: exact hundredths, half away from zero, no floats', () => {
  assert.is(percentage(2, 3), '66.67');
  assert.is(percentage(1, 3), '33.33');
  assert.is(percentage(1, 32), '3.13', '3.125 rounds up');
  assert.is(percentage(1, 8), '12.50');
  assert.is(percentage(0, 7), '0.00');
  assert.is(percentage(7, 7), '100.00');
  // 0.1 + 0.2 style float error would show here: 29/30 = 96.666…
  assert.is(percentage(29, 30), '96.67');
});

t('tally: score and potential over applicable criteria; N/A leaves the potential', () => {
  const f = tally(card, [ans('a', 10, 10), ans('b', 5, 20), ans('c', 0, 2, true)]);
  assert.equal(f, { score: '15.00', potential_score: '30.00', percentage: '50.00', critical_failed: false });
});

t('tally: a critical criterion at 0 fails the call; a non-critical 0 does not', () => {
  assert.is(tally(card, [ans('a', 0, 10), ans('b', 20, 20), ans('c', 2, 2)]).critical_failed, true);
  assert.is(tally(card, [ans('a', 1, 10), ans('b', 0, 20), ans('c', 0, 2)]).critical_failed, false);
});

t('tally: nothing applicable gives a null percentage and no critical failure', () => {
  const onlyNa: Criterion[] = [card[1], card[2]];
  assert.equal(tally(onlyNa, [ans('b', 0, 20, true), ans('c', 0, 2, true)]), { score: '0.00', potential_score: '0.00', percentage: null, critical_failed: false });
});

t('tally: points past the weight, or a missing answer, are refused', () => {
  assert.throws(() => tally(card, [ans('a', 11, 10), ans('b', 0, 20), ans('c', 0, 2)]), /out of 0–10/);
  assert.throws(() => tally(card, [ans('a', 1, 10), ans('b', 0, 20)]), /no answer for criterion c/);
});

const call = (f: Partial<CallFacts> = {}): CallFacts => ({ answered: true, talk_seconds: 90, dropped: false, transfer_state: null, person_id: 'per_1', disposition_after_call: 'sale', ...f });
const byKey = (a: Answer[]) => Object.fromEntries(a.map((x) => [x.criterion, x]));

t('built-in: conversation length at its edges (19/20/59/60 s)', () => {
  const points = (s: number) => byKey(builtinAnswers(DEFAULT_SCORECARD, call({ talk_seconds: s }), null)).conversation.points;
  assert.is(points(19), 0);
  assert.is(points(20), 10);
  assert.is(points(59), 10);
  assert.is(points(60), 20);
});

t('built-in: the rules of each criterion, and N/A where the data does not exist', () => {
  const good = byKey(builtinAnswers(DEFAULT_SCORECARD, call({ transfer_state: 'bridged' }), null));
  assert.is(good.connected.points, 10);
  assert.is(good.not_dropped.points, 15);
  assert.is(good.outcome_recorded.points, 15);
  assert.is(good.handover.points, 15);
  assert.ok(good.greeting.not_applicable && good.recording_disclosure.not_applicable, 'no transcript lines: n/a');
  const bad = byKey(builtinAnswers(DEFAULT_SCORECARD, call({ dropped: true, talk_seconds: 0, disposition_after_call: null, transfer_state: 'requested' }), null));
  assert.is(bad.connected.points, 0);
  assert.is(bad.not_dropped.points, 0);
  assert.is(bad.outcome_recorded.points, 0);
  assert.is(bad.handover.points, 0);
  const bare = byKey(builtinAnswers(DEFAULT_SCORECARD, call({ person_id: null }), null));
  assert.ok(bare.outcome_recorded.not_applicable && bare.handover.not_applicable);
  // An imported recording with no call: only its length is known.
  const imported = byKey(builtinAnswers(DEFAULT_SCORECARD, null, 61.4));
  assert.is(imported.conversation.points, 20);
  assert.ok(['connected', 'not_dropped', 'outcome_recorded', 'handover', 'greeting'].every((k) => imported[k].not_applicable));
  assert.ok(byKey(builtinAnswers(DEFAULT_SCORECARD, null, null)).conversation.not_applicable);
  assert.ok(byKey(builtinAnswers([{ ...card[0], key: 'own' }], call(), null)).own.not_applicable, 'a criterion it has no rule for');
});

const model = (answers: unknown[]) => ({ answers });
const good = () => [
  { criterion: 'a', points: 10, not_applicable: false, justification: 'ok' },
  { criterion: 'b', points: 0, not_applicable: true, justification: 'no hand-over' },
  { criterion: 'c', points: 2, not_applicable: false, justification: 'fine' },
];

t('model answers: a good answer is taken in scorecard order with the weights', () => {
  const a = modelAnswers(card, model([good()[2], good()[0], good()[1]]));
  assert.equal(a.map((x) => [x.criterion, x.points, x.max_points, x.not_applicable]), [['a', 10, 10, false], ['b', 0, 20, true], ['c', 2, 2, false]]);
});

t('model answers: each malformed shape is refused', () => {
  const bad = (what: unknown, re: RegExp) => assert.throws(() => modelAnswers(card, what), (e: unknown) => e instanceof AiScoringError && re.test((e as Error).message));
  bad({ answer: good() }, /malformed/);
  bad(model(good().slice(0, 2)), /no answer for criterion c/);
  bad(model([...good(), good()[0]]), /answered twice/);
  bad(model([...good(), { criterion: 'z', points: 0, not_applicable: false, justification: 'x' }]), /unknown criterion/);
  bad(model([{ ...good()[0], points: 11 }, good()[1], good()[2]]), /at most 10/);
  bad(model([{ ...good()[0], points: 2.5 }, good()[1], good()[2]]), /malformed/);
  bad(model([{ ...good()[0], points: -1 }, good()[1], good()[2]]), /malformed/);
  bad(model([{ ...good()[0], not_applicable: true, points: 0 }, good()[1], good()[2]]), /may not be not applicable/);
  bad(model([good()[0], { ...good()[1], points: 3 }, good()[2]]), /not applicable but has points/);
  bad(model([{ ...good()[0], justification: '' }, good()[1], good()[2]]), /malformed/);
  bad(model([{ ...good()[0], extra: 1 }, good()[1], good()[2]]), /malformed/);
  // The justification at its limit and one past it.
  assert.is(modelAnswers(card, model([{ ...good()[0], justification: 'j'.repeat(2000) }, good()[1], good()[2]]))[0].justification.length, 2000);
  bad(model([{ ...good()[0], justification: 'j'.repeat(2001) }, good()[1], good()[2]]), /malformed/);
});

t.run();
