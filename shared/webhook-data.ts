/**
 * What a webhook message's `data` is, written with the event (issue 17): the outbox keeps the data
 * as the text it was given (a `json` column), and beside it, for an event queued for webhooks,
 * the two other texts a message may carry when they differ from it: the data as customers see it
 * (an operator who acted is not named to them) and that with phone numbers masked (for
 * connections without "Send full phone numbers"). So the webhooks consumer makes every delivery
 * in one statement, its body put together from these texts, without reading the events back
 * into this process.
 *
 * It is in shared/ because it is written below the webhooks room, which only reads it back: by
 * the outbox (`control-plane/infra/runtime/outbox.ts`) as each event is written, and by migration
 * 0035 for events queued before 0027; infrastructure imports no domain room.
 */
import { maskPhoneNumbers } from './masking.ts';

/** An operator who acted is named to operators only: customers see that an operator acted, not who. */
export function forCustomers(data: Record<string, unknown>): Record<string, unknown> {
  const a = data.actor as { kind?: unknown } | null | undefined;
  return a && typeof a === 'object' && a.kind === 'operator' ? { ...data, actor: { kind: 'operator' } } : data;
}

/**
 * The customers' text of `data` (null: the same as `text`, the data as written) and its masked
 * text (null: the same as the customers' text).
 */
export function webhookTexts(data: Record<string, unknown>, text: string): { shown: string | null; masked: string | null } {
  const customers = forCustomers(data);
  const shown = customers === data ? null : JSON.stringify(customers);
  const maskedText = JSON.stringify(maskPhoneNumbers(customers));
  return { shown, masked: maskedText === (shown ?? text) ? null : maskedText };
}
