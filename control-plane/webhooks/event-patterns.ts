/**
 * Event-name patterns of webhook connections ("Events to send"). Names have the form
 * `vd.group.event`, parts separated by dots. In a pattern `*` matches exactly one part and a
 * trailing `>` matches one or more remaining parts (NATS semantics: `vd.>` matches
 * `vd.call.ended` but not `vd`). A connection lists 1 to 100 patterns.
 *
 * Pure: checking gives a reason fit for a 422 message; matching assumes a checked pattern (an
 * unchecked one never throws: a `>` that is not last is then compared as a literal part).
 */

export const MAX_PATTERNS = 100;
const MAX_PATTERN_CHARS = 200;
const LITERAL = /^[a-z0-9_]+$/;

/** Checks one pattern (surrounding whitespace is ignored); reason says what is wrong. */
export function checkPattern(p: string): { ok: true } | { ok: false; reason: string } {
  const fail = (reason: string) => ({ ok: false as const, reason });
  if (typeof p !== 'string') return fail('must be a string');
  const s = p.trim();
  if (s === '') return fail('is empty');
  if (s.length > MAX_PATTERN_CHARS) return fail(`is longer than ${MAX_PATTERN_CHARS} characters`);
  if (/\s/.test(s)) return fail('may not contain spaces or other whitespace');
  if (s.startsWith('.')) return fail('may not start with a dot');
  if (s.endsWith('.')) return fail('may not end with a dot');
  const parts = s.split('.');
  if (parts.includes('')) return fail('has an empty part (two dots in a row)');
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    if (part === '*') continue;
    if (part === '>') {
      if (i === parts.length - 1) continue;
      return fail("'>' may only be the last part");
    }
    if (part.includes('>')) return fail(`'>' must be a whole part (the last one), not inside "${part}"`);
    if (part.includes('*')) return fail(`'*' must be a whole part, not inside "${part}"`);
    if (!LITERAL.test(part)) return fail(`part "${part}": parts may hold only a-z, 0-9 and _`);
  }
  if (parts.length < 2) {
    return fail(`needs at least two parts, like vd.call.* (use vd.> for every event)`);
  }
  return { ok: true };
}

/**
 * Checks a connection's list: 1 to 100 entries (counted as given, before de-duplication), each a
 * valid pattern. Returns them trimmed and de-duplicated, first occurrence kept. Positions in
 * reasons count from 0: `events[3] "vd.call.>x": …`.
 */
export function checkPatterns(list: unknown): { ok: true; patterns: string[] } | { ok: false; reason: string } {
  if (!Array.isArray(list)) return { ok: false, reason: 'events must be a list of event name patterns' };
  if (list.length === 0) return { ok: false, reason: 'events must hold at least one pattern (vd.> for every event)' };
  if (list.length > MAX_PATTERNS) {
    return { ok: false, reason: `events holds ${list.length} patterns; the limit is ${MAX_PATTERNS}` };
  }
  const seen = new Set<string>();
  for (let i = 0; i < list.length; i++) {
    const p: unknown = list[i];
    if (typeof p !== 'string') return { ok: false, reason: `events[${i}] must be a string` };
    const c = checkPattern(p);
    if (!c.ok) return { ok: false, reason: `events[${i}] ${quote(p)}: ${c.reason}` };
    seen.add(p.trim());
  }
  return { ok: true, patterns: [...seen] };
}

/** A pattern quoted for a message, cut short when long. */
function quote(p: string): string {
  return JSON.stringify(p.length > 60 ? `${p.slice(0, 60)}…` : p);
}

/**
 * What to say of patterns that can match none of `names` (the events the platform emits,
 * `shared/events.ts`): one warning each, in the list's order. Such a pattern is valid and kept
 * (a later release may emit a name it matches); the answer only says it matches nothing now.
 */
export function patternWarnings(patterns: readonly string[], names: readonly string[]): string[] {
  const warnings: string[] = [];
  for (const p of patterns) {
    if (names.some((n) => matchesPattern(p, n))) continue;
    const parts = p.split('.');
    const hint = parts.at(-1) !== '>' && parts.length !== 3 ? ': event names have three parts, like vd.call.ended (vd.call.* for a group, vd.> for every event)' : '';
    warnings.push(`events ${quote(p)} matches no event the platform sends${hint}`);
  }
  return warnings;
}

/**
 * Whether `subject` (an event name) matches `pattern`: the rule where the API checks and previews
 * patterns. Where the store matches (the webhooks consumer's statement) the same rule is the SQL
 * function `webhook_subject_matches` (migration 0027); test/integrations/webhook-patterns holds
 * both to one reference on random names and patterns.
 */
export function matchesPattern(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>' && i === p.length - 1) return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
