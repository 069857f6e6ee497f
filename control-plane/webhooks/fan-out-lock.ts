/**
 * The outbox's webhook lock: the advisory lock that orders event writes against the making of
 * webhook connections. Its shared side is taken by every transaction that writes events, inside
 * the outbox's event statement (`control-plane/infra/runtime/outbox.ts`, through the SQL function
 * `outbox_webhooks_listening` of migration 0027); its exclusive side is taken here, by the
 * webhooks room, when a connection is made.
 */
import { sql } from 'kysely';
import type { Tx } from '../infra/db/store.ts';

/**
 * The advisory lock that orders event writes against the making of webhook connections. Every
 * transaction that writes events holds it shared (from before its events are written until it
 * ends); making a connection holds it alone (`holdForNewConnection`). So an event is queued for
 * the webhooks consumer exactly when its company (or, for a platform-wide event, any company) had
 * a webhook connection when it was written: a transaction writing events either started after the
 * new connection committed, and sees it, or ended before the connection's time was taken, and
 * its events are older than the connection (which gets only events written after it was made).
 * A company without webhook connections thus costs the webhooks consumer nothing.
 */
const WEBHOOK_FANOUT_LOCK = 0x76640001; // 1986265089: its shared side is taken in `outbox_webhooks_listening` (migration 0027)

/** Inside the transaction that makes a webhook connection, before its time is taken. */
export async function holdForNewConnection(tx: Tx): Promise<void> {
  await sql`select pg_advisory_xact_lock(${WEBHOOK_FANOUT_LOCK})`.execute(tx);
}
