/**
 * One statement: the retrying webhook deliveries whose 24 h are over and that nobody holds are
 * given up (the first step of every claim, `claim-due.ts`).
 *
 * Cost: found through the open rows' index of retrying deliveries by their 24 h mark, so with
 * none expired it is one index probe (part of the claim's figure in `claim-due.ts`).
 */
import { sql } from 'kysely';
import type { Store } from '../infra/db/store.ts';

/**
 * Gives up the retrying deliveries whose 24 h are over and that nobody holds (one locked by
 * another statement is left for the next sweep).
 */
export async function giveUpExpired(store: Store, now: Date): Promise<void> {
  await sql`
    with expired as (
      select d.id from webhook_open o join webhook_deliveries d on d.id = o.delivery_id
      where o.status = 'retrying' and o.give_up_at <= ${now}
        and d.status = 'retrying' and d.give_up_at <= ${now} and (d.lease_until is null or d.lease_until < clock_timestamp())
      for update of d skip locked),
    done as (
      update webhook_deliveries d set status = 'given_up', given_up_at = ${now}, next_at = null
      from expired e where d.id = e.id
      returning d.id)
    update webhook_open o set status = 'given_up', next_at = null from done where o.delivery_id = done.id`.execute(store.db);
}
