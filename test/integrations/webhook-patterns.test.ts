/**
 * The event-name pattern rule has two homes: `matchesPattern` (control-plane/webhooks/event-patterns.ts), where
 * the API checks and previews a connection's patterns, and the SQL function
 * `webhook_subject_matches` (migration 0027), where the webhooks consumer's statement matches.
 * This holds both to one small reference written here (`*` one part, a last `>` one or more
 * parts), on random valid pattern lists and event names, on Postgres and on PGlite: thousands of
 * cases a run, each store asked in one statement. The seed is printed with a failure;
 * PATTERNS_SEED replays it.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { sql } from 'kysely';
import { openPglite, openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { checkPattern, matchesPattern } from '../../control-plane/webhooks/event-patterns.ts';
import { createTestDatabase } from '../support/db.ts';

const t = suite('webhook patterns: the store and the API match alike');
let drop: () => Promise<void> = async () => {};
const stores: Array<[string, Store]> = [];

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  stores.push(['postgres', openPostgres(db.url)], ['pglite', await openPglite(null)]);
  for (const [, s] of stores) await s.migrate();
});

t.after(async () => {
  for (const [, s] of stores) await s.close();
  await drop();
});

/** The reference: a pattern's parts against a name's parts, one at a time. */
function reference(p: string[], s: string[]): boolean {
  if (p.length === 1 && p[0] === '>') return s.length >= 1;
  if (p.length === 0 || s.length === 0) return p.length === s.length;
  return (p[0] === '*' || p[0] === s[0]) && reference(p.slice(1), s.slice(1));
}

const anyMatches = (list: string[], subject: string) => list.some((p) => reference(p.split('.'), subject.split('.')));

// A small alphabet of parts, so that matches happen; now and then a part of its own.
const PART = fc.oneof({ weight: 6, arbitrary: fc.constantFrom('vd', 'call', 'journey', 'ended', 'x', 'a_1') }, { weight: 1, arbitrary: fc.stringMatching(/^[a-z0-9_]{1,6}$/) });
const subjectArb = fc.array(PART, { minLength: 1, maxLength: 6 }).map((ps) => ps.join('.'));
const patternArb = fc
  .tuple(fc.array(fc.oneof({ weight: 3, arbitrary: PART }, { weight: 1, arbitrary: fc.constant('*') }), { minLength: 1, maxLength: 5 }), fc.boolean())
  .map(([ps, tail]) => (tail ? [...ps, '>'] : ps).join('.'))
  .filter((p) => checkPattern(p).ok);
const caseArb = fc.record({ patterns: fc.array(patternArb, { minLength: 1, maxLength: 4 }), subject: subjectArb });

/** The SQL function's answers for every case, in one statement. */
async function inSql(s: Store, cases: Array<{ patterns: string[]; subject: string }>): Promise<boolean[]> {
  const { rows } = await sql<{ m: boolean }>`
    select webhook_subject_matches(c.patterns::jsonb, c.subject) as m
    from json_to_recordset(${JSON.stringify(cases.map((c, i) => ({ i, patterns: JSON.stringify(c.patterns), subject: c.subject })))}::json)
      as c(i int, patterns text, subject text)
    order by c.i`.execute(s.db);
  return rows.map((r) => r.m);
}

t('the spec\'s examples and the edges, in SQL as in TypeScript', async () => {
  const cases: Array<[string[], string, boolean]> = [
    [['vd.call.ended'], 'vd.call.ended', true],
    [['vd.call.*'], 'vd.call.ended', true],
    [['vd.call.*'], 'vd.call.x.y', false],
    [['vd.call.*'], 'vd.call', false],
    [['vd.journey.>'], 'vd.journey.x.y', true],
    [['vd.journey.>'], 'vd.journey', false],
    [['vd.>'], 'vd', false],
    [['vd.call.ended'], 'vd.call.ended.x', false],
    [['*.call.ended'], 'vd.call.ended', true],
    [['vd.call.*', 'vd.journey.>'], 'vd.journey.a.b', true],
    [['vd.nothing.*', 'vd.campaign.>'], 'vd.call.ended', false],
  ];
  for (const [name, s] of stores) {
    const got = await inSql(s, cases.map(([patterns, subject]) => ({ patterns, subject })));
    cases.forEach(([patterns, subject, want], i) => {
      assert.is(anyMatches(patterns, subject), want, `reference: ${patterns.join(' ')} ~ ${subject}`);
      assert.is(got[i], want, `${name}: ${patterns.join(' ')} ~ ${subject}`);
    });
  }
  cases.forEach(([patterns, subject, want]) => assert.is(patterns.some((p) => matchesPattern(p, subject)), want, `matchesPattern: ${patterns.join(' ')} ~ ${subject}`));
});

t('property: webhook_subject_matches and matchesPattern agree with the reference on random lists and names', async () => {
  const seed = Number(process.env.PATTERNS_SEED ?? Date.now() % 2_147_483_647);
  const cases = fc.sample(caseArb, { seed, numRuns: 4000 });
  const want = cases.map((c) => anyMatches(c.patterns, c.subject));
  const hits = want.filter(Boolean).length;
  assert.ok(hits > 200 && hits < cases.length - 200, `both answers happen often (${hits} of ${cases.length} match; seed ${seed})`);
  cases.forEach((c, i) => assert.is(c.patterns.some((p) => matchesPattern(p, c.subject)), want[i], `matchesPattern: ${c.patterns.join(' ')} ~ ${c.subject} (seed ${seed})`));
  for (const [name, s] of stores) {
    const got = await inSql(s, cases);
    assert.is(got.length, cases.length);
    cases.forEach((c, i) => assert.is(got[i], want[i], `${name}: ${JSON.stringify(c.patterns)} ~ ${c.subject} (seed ${seed})`));
  }
});

t.run();
