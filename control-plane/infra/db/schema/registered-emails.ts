/** Every e-mail that signs in, operators and company users alike, so one e-mail is one person. */

/** One row per registered e-mail (lower case), whichever kind of user holds it. */
export interface RegisteredEmailsTable {
  email: string;
  user_kind: 'operator' | 'company';
  user_id: string;
}
