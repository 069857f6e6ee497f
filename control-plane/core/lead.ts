/**
 * One lead as the platform stores it, by the spec's lead import rules: its fields and their
 * longest texts, the phone number normalised to E.164 (read as US when it has no `+`, a legacy
 * `phone_code` other than 1 put in front), a date of birth that is not a date left empty with a
 * warning. The same rules for every path people arrive by: the JSON API and inbound leads
 * (`control-plane/core/people.ts`) and the legacy CSV import (`control-plane/imports/legacy/`).
 */
import { z } from 'zod';
import { toE164 } from '../../shared/phone.ts';

/** Rejected people listed in an answer. */
export const REJECTED_ROWS_LISTED = 50;

/** A lead's text field of at most `max` characters; numbers are taken as a spreadsheet gives them. */
export const leadText = (max: number) => z.union([z.string(), z.number()]).transform(String).pipe(z.string().max(max)).nullish();

/**
 * The longest text each lead field takes (the file import checks the same per row, without zod).
 * A date of birth has no limit: one that is not a date is left empty (`normaliseLead`).
 */
export const LEAD_FIELD_MAX = { phone_number: 40, phone_code: 8, lead_id: 200, first_name: 200, last_name: 200, state: 100, postal_code: 20, email: 320, timezone: 64 } as const;

/** One person as a caller sends it. Numbers are accepted where a spreadsheet would give them. */
export const LeadInput = z.object({
  phone_number: leadText(LEAD_FIELD_MAX.phone_number),
  phone_code: leadText(LEAD_FIELD_MAX.phone_code),
  lead_id: leadText(LEAD_FIELD_MAX.lead_id),
  first_name: leadText(LEAD_FIELD_MAX.first_name),
  last_name: leadText(LEAD_FIELD_MAX.last_name),
  state: leadText(LEAD_FIELD_MAX.state),
  postal_code: leadText(LEAD_FIELD_MAX.postal_code),
  // Anything: a value that is not a date leaves the date empty and warns (`normaliseLead`).
  date_of_birth: z.unknown().optional(),
  email: leadText(LEAD_FIELD_MAX.email),
  timezone: leadText(LEAD_FIELD_MAX.timezone),
});
export type LeadInput = z.infer<typeof LeadInput>;

/** A lead ready to store. */
export type Lead = {
  phone_number: string;
  lead_id: string | null;
  first_name: string | null;
  last_name: string | null;
  state: string | null;
  postal_code: string | null;
  email: string | null;
  date_of_birth: string | null;
  /** The person's own IANA zone, as given (checked by `checkTimezones`). */
  timezone: string | null;
};

/** Why a lead was imported with a field left empty (counted in the result's `warnings`). */
export const BAD_BIRTH_DATE = 'date_of_birth is not a date (YYYY-MM-DD): left empty';

/**
 * A lead's fields cleaned up per the lead import rules, or why it cannot be imported. Only the
 * phone number refuses a lead (rule 4): a date of birth that is not a date is left empty, as one
 * starting 0000 is, and the lead carries a `warning` saying so.
 */
export function normaliseLead(input: LeadInput): { ok: true; lead: Lead; warning: string | null } | { ok: false; reason: string } {
  const raw = input.phone_number?.trim() ?? '';
  if (raw === '') return { ok: false, reason: 'missing phone_number' };
  const code = callingCode(input.phone_code);
  // A phone_code other than 1 goes in front of the number (rule 3); 1 is the default country.
  const dialled = code !== '' && code !== '1' && !raw.startsWith('+') ? `+${code}${raw}` : raw;
  const phone = toE164(dialled, 'US', { keepCheck: true });
  if (!phone) return { ok: false, reason: 'invalid phone number' };
  const dob = birthDate(input.date_of_birth);
  return {
    ok: true,
    warning: dob === false ? BAD_BIRTH_DATE : null,
    lead: {
      phone_number: phone,
      lead_id: blankToNull(input.lead_id),
      first_name: blankToNull(input.first_name),
      last_name: blankToNull(input.last_name),
      state: blankToNull(input.state)?.toUpperCase() ?? null,
      postal_code: blankToNull(input.postal_code),
      email: blankToNull(input.email),
      date_of_birth: dob === false ? null : dob,
      timezone: blankToNull(input.timezone),
    },
  };
}

/**
 * The country calling code of a legacy `phone_code` as written: `44`, `+44`, `011 44` or `00 44`
 * (an international dialling prefix, 011 from North America or 00, is dropped) → `44`.
 */
function callingCode(v: string | null | undefined): string {
  const digits = (v ?? '').replace(/[\s+-]/g, '');
  return digits.replace(/^(011|00)(?=\d)/, '');
}

/** `YYYY-MM-DD`, null when empty or starting 0000 (rule 3), false when not a real date. */
function birthDate(v: unknown): string | null | false {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string' && typeof v !== 'number') return false;
  const s = String(v).trim();
  if (s === '' || s.startsWith('0000')) return null;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  // A real day of the (proleptic Gregorian) calendar, worked out without a Date a row.
  const year = Number(s.slice(0, 4));
  const month = Number(s.slice(5, 7));
  const day = Number(s.slice(8, 10));
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 ? (leap ? 29 : 28) : DAYS_IN_MONTH[month - 1]) ? s : false;
}
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function blankToNull(v: string | null | undefined): string | null {
  const s = v?.trim() ?? '';
  return s === '' ? null : s;
}
