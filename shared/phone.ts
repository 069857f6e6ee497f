/** Phone numbers: everything the platform stores is E.164, normalised with libphonenumber-js. */
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';

/**
 * The E.164 form of `input`, or null when it is not a valid number. A number without `+` is read
 * in `defaultCountry` (US by default: the legacy dialer's phone_code 1).
 */
export function toE164(input: string, defaultCountry: CountryCode = 'US'): string | null {
  const s = input.trim();
  if (s.length === 0 || s.length > 40) return null;
  const parsed = parsePhoneNumberFromString(s, defaultCountry);
  if (!parsed || !parsed.isValid()) return null;
  return parsed.number;
}
