/**
 * Calling windows, pure: the legal rule of a callee's region, a campaign's window inside it, and
 * whether (and when next) that window is open in every one of the callee's zones. Local times come
 * from the runtime's own zone rules (`Intl`), never a fixed offset, so daylight-saving changes
 * and zones such as Pacific/Honolulu (no DST) or Pacific/Kiritimati (UTC+14) are right, and the
 * weekday is the callee's, not UTC's.
 */

export type Weekday = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun';
export const WEEKDAYS: readonly Weekday[] = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

/** A legal row: its local window in minutes of the day, [startMin, endMin), and calls a day. */
export type LegalRule = { region: string; startMin: number; endMin: number; maxCallsPerDay: number | null };
/** The legal rules: the default (region `*`) and the rows by region (`US-FL`, or a country `US`). */
export type LegalRules = { default: LegalRule; regions: Map<string, LegalRule> };
/** A campaign's own window as stored (`HH:MM` local, days by name); null: every day, the legal window. */
export type CampaignWindow = { days: Weekday[]; start: string; end: string } | null;
/** The window in force: local weekdays (0 = Sunday) and minutes [startMin, endMin). */
export type Window = { days: ReadonlySet<number>; startMin: number; endMin: number };

/** `HH:MM` (00:00–24:00) as minutes of the day; null when it is not one. */
export function parseClock(s: string): number | null {
  const m = /^([01]\d|2[0-4]):([0-5]\d)$/.exec(s);
  if (!m) return null;
  const v = Number(m[1]) * 60 + Number(m[2]);
  return v > 1440 ? null : v;
}

/** Minutes of the day as `HH:MM`. */
export function formatClock(min: number): string {
  return `${String(Math.floor(min / 60)).padStart(2, '0')}:${String(min % 60).padStart(2, '0')}`;
}

/** Whether `zone` is an IANA zone name this runtime knows (aliases such as `US/Eastern` too). */
export function isKnownZone(zone: string): boolean {
  if (!zone || zone.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * The legal row for `region`: its own row (`US-FL`), else its country's (`US`), else the default.
 * A region's row stands for the whole window and limit of that region (it does not add to the
 * default: FL's 08:00–20:00 replaces the federal 08:00–21:00).
 */
export function legalRuleFor(rules: LegalRules, region: string): LegalRule {
  return rules.regions.get(region) ?? rules.regions.get(region.split('-', 1)[0]!) ?? rules.default;
}

/** The campaign's window inside the legal one; null when they do not meet (never open). */
export function windowFor(campaign: CampaignWindow, legal: LegalRule): Window | null {
  const days = campaign ? new Set(campaign.days.map((d) => WEEKDAYS.indexOf(d))) : new Set([0, 1, 2, 3, 4, 5, 6]);
  const startMin = Math.max(legal.startMin, campaign ? parseClock(campaign.start)! : 0);
  const endMin = Math.min(legal.endMin, campaign ? parseClock(campaign.end)! : 1440);
  if (startMin >= endMin || days.size === 0) return null;
  return { days, startMin, endMin };
}

const formats = new Map<string, Intl.DateTimeFormat>();
function formatFor(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', weekday: 'short', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formats.set(zone, f);
  }
  return f;
}
const DAY_INDEX: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };

/** The wall clock in `zone` at `at` (ms): its date, weekday (0 = Sunday), minute of the day and offset. */
export function localTime(zone: string, at: number): { year: number; month: number; day: number; weekday: number; minute: number; second: number; offsetMs: number } {
  const parts: Record<string, string> = {};
  for (const p of formatFor(zone).formatToParts(at)) parts[p.type] = p.value;
  const year = Number(parts.year);
  const month = Number(parts.month);
  const day = Number(parts.day);
  const hour = Number(parts.hour);
  const minute = Number(parts.minute);
  const second = Number(parts.second);
  const asUtc = Date.UTC(year, month - 1, day, hour, minute, second);
  return { year, month, day, weekday: DAY_INDEX[parts.weekday!]!, minute: hour * 60 + minute, second, offsetMs: asUtc - (at - (at % 1000 + 1000) % 1000) };
}

/** Whether `window` is open at `at` in `zone`. */
export function openIn(zone: string, window: Window, at: number): boolean {
  const t = localTime(zone, at);
  return window.days.has(t.weekday) && t.minute >= window.startMin && t.minute < window.endMin;
}

/** Whether `window` is open at `at` in every one of `zones` (none: never). */
export function openInAll(zones: readonly string[], window: Window | null, at: number): boolean {
  if (!window || zones.length === 0) return false;
  return zones.every((z) => openIn(z, window, at));
}

/** The instant (ms) the local wall clock in `zone` reads `minute` on the local date y-m-d. */
function instantOf(zone: string, y: number, m: number, d: number, minute: number): number {
  const wall = Date.UTC(y, m - 1, d, Math.floor(minute / 60), minute % 60);
  // Two rounds: the offset at the guess, then at the corrected instant (a DST change between).
  let at = wall - localTime(zone, wall).offsetMs;
  at = wall - localTime(zone, at).offsetMs;
  return at;
}

/**
 * The first instant at or after `at` when `window` is open in every one of `zones`, looking up
 * to 8 days ahead; null when it never opens in that time (no day of the week, or zones so far
 * apart that their windows never meet). The answer is `at` itself when the window is open now;
 * otherwise the later window start of one of the zones (where all windows overlap, the overlap
 * begins at one zone's start).
 */
export function nextOpening(zones: readonly string[], window: Window | null, at: number): number | null {
  if (!window || zones.length === 0) return null;
  if (openInAll(zones, window, at)) return at;
  const candidates: number[] = [];
  for (const z of zones) {
    for (let k = 0; k <= 8; k++) {
      const t = localTime(z, at + k * 86_400_000);
      const start = instantOf(z, t.year, t.month, t.day, window.startMin);
      if (start > at) candidates.push(start);
    }
  }
  candidates.sort((a, b) => a - b);
  for (const c of candidates) if (openInAll(zones, window, c)) return c;
  return null;
}

/** The callee's local time at `at` as `HH:MM (zone)`, for messages. */
export function describeLocal(zones: readonly string[], at: number): string {
  return zones.map((z) => `${formatClock(localTime(z, at).minute)} ${WEEKDAYS[localTime(z, at).weekday]} (${z})`).join(', ');
}
