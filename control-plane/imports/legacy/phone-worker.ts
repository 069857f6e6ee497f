/**
 * A phone-number worker thread (see `phone-pool.ts`): answers each batch of raw numbers with their
 * E.164 forms (null for an invalid one), in order, with shared/phone.ts's own `toE164`.
 */
import { parentPort } from 'node:worker_threads';
import { toE164 } from '../../../shared/phone.ts';

export type PhoneBatch = { id: number; inputs: string[] };
export type PhoneAnswer = { id: number; out: Array<string | null> };

parentPort!.on('message', (batch: PhoneBatch) => {
  const out = batch.inputs.map((n) => toE164(n));
  parentPort!.postMessage({ id: batch.id, out } satisfies PhoneAnswer);
});
