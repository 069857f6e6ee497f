/**
 * The deliveries not delivered (pending, retrying, given up), one small row each, which carries
 * the due index (migration 0026): made with the delivery, deleted when it is delivered, moved with
 * each retry. The delivery's own row stays the one to read; this one only finds due ones fast.
 */
import type { DeliveryStatus } from './connectors.ts';

export interface WebhookOpenTable {
  delivery_id: string;
  connector_id: string;
  status: Exclude<DeliveryStatus, 'delivered'>;
  next_at: Date | null;
  give_up_at: Date | null;
  created_at: Date;
}
