/**
 * Every event queued for webhooks gets its webhook texts (issue 29): events queued before
 * migration 0027 and not yet taken by the webhooks consumer are given `hook`, `hook_shown` and
 * `hook_masked` as `runtime/outbox.ts` writes them for every event since, so the consumer's one
 * statement (`integrations/fan-out.ts`) takes every event and the consumer that read such events
 * back into the process (`makeDeliveries`) is gone.
 *
 * The texts are made from the data as it is read back (its `json` text, which 0027 made from the
 * `jsonb` value, parsed and written again), exactly as that consumer made its bodies, so a
 * delivery's body is byte for byte the one it would have written: `hook_shown` is always set (the
 * stored text has jsonb's spacing, which the bodies never had).
 *
 * The queue is read by its primary key, 1,000 events at a time; a database without such events
 * costs one index probe.
 */
import { sql, type Kysely } from 'kysely';
import { webhookTexts } from '../../../../shared/webhook-data.ts';

export async function up(db: Kysely<any>): Promise<void> {
  for (let after = '0'; ; ) {
    const { rows } = await sql<{ seq: string; data: string }>`
      select o.seq::text as seq, o.data::text as data
      from outbox_pending p join outbox o on o.seq = p.seq
      where p.consumer = 'webhooks' and p.seq > ${after}::bigint and o.hook is not true
      order by p.seq limit 1000`.execute(db);
    if (rows.length === 0) return;
    const texts = rows.map((r) => {
      const data = JSON.parse(r.data) as Record<string, unknown>;
      const written = JSON.stringify(data);
      const t = webhookTexts(data, written);
      return { seq: r.seq, shown: t.shown ?? written, masked: t.masked };
    });
    await sql`
      update outbox o set hook = true, hook_shown = x.shown, hook_masked = x.masked
      from json_to_recordset(${JSON.stringify(texts)}::json) as x(seq bigint, shown text, masked text)
      where o.seq = x.seq`.execute(db);
    after = rows[rows.length - 1].seq;
  }
}

/**
 * Nothing to undo: the texts are what migration 0027's columns hold for every event written
 * since, and without them an event could not be sent (its consumer is gone).
 */
export async function down(): Promise<void> {}
