/**
 * The outbox's lag per consumer, for the metrics scrape: how many events wait for each consumer
 * and how old the oldest is. Two index lookups per consumer (the queue's primary key is
 * (consumer, seq); the oldest event is the lowest seq), inside a statement time limit so that a
 * store in trouble does not keep a scrape's query running after the scrape has given up on it.
 */
import { sql } from 'kysely';
import type { Store } from '../db/store.ts';
import type { ConsumerLag } from '../../metrics.ts';
import { OUTBOX_CONSUMERS } from './outbox.ts';

export async function outboxLag(store: Store, timeoutMs: number): Promise<ConsumerLag[]> {
  return store.transaction(async (tx) => {
    await sql.raw(`set local statement_timeout = ${Math.max(1, Math.round(timeoutMs))}`).execute(tx);
    const { rows } = await sql<{ consumer: string; pending: number; oldest: number | null }>`
      select c.consumer,
        (select count(*) from outbox_pending p where p.consumer = c.consumer)::int as pending,
        (select extract(epoch from (now() - o.at))::float8 from outbox o
          where o.seq = (select min(p.seq) from outbox_pending p where p.consumer = c.consumer)) as oldest
      from unnest(${OUTBOX_CONSUMERS}::text[]) as c(consumer)`.execute(tx);
    return rows.map((r) => ({ consumer: r.consumer, pending: Number(r.pending), oldestAgeSeconds: r.oldest === null ? null : Math.max(0, Number(r.oldest)) }));
  });
}
