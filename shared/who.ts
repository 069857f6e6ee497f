/**
 * Who acted, as audit lines, events and actors' contexts record it: an operator, a company's
 * person or API key (`company`, with the user's or key's id), or the platform itself (`system`).
 * The e-mail is the person's at the time, so a line stays readable after the account changes.
 */
export type Who = { kind: 'operator' | 'company' | 'system'; id: string | null; email: string | null };
