/**
 * The usage meter: each item counted once by its source whatever happens to its delivery, the
 * monthly totals kept by the meter's outbox consumer, and "behind" when that consumer has not
 * caught up with a month. Real Postgres, and the embedded store for the arithmetic.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { emit } from '../../control-plane/infra/runtime/outbox.ts';
import { assertMeterCurrent, monthUsage } from '../../control-plane/usage/ledger.ts';
import { callMinutes, listVerify, meterUsage, type UsageItem } from '../../control-plane/usage/meter.ts';
import { DomainError } from '../../shared/errors.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { makeCompany } from '../support/fixtures.ts';
import { startTestServer } from '../support/server.ts';

async function meter(cp: RunningControlPlane, items: UsageItem[]): Promise<void> {
  await cp.services.store.transaction(async (tx) => {
    await emit(tx, await meterUsage(tx, items));
  });
}

const call = (tenantId: string, n: number) => ({ id: `call_meter${String(n).padStart(20, '0')}`, tenant_id: tenantId, campaign_id: null });

async function refusal(p: Promise<unknown>): Promise<DomainError | null> {
  try {
    await p;
    return null;
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
}

for (const where of ['postgres', 'embedded'] as const) {
  const t = suite(`usage meter (${where})`);
  let cp: RunningControlPlane;
  let drop: () => Promise<void> = async () => {};

  t.before(async () => {
    if (where === 'postgres') {
      const db = await createTestDatabase();
      drop = db.drop;
      cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix() });
    } else {
      cp = await startTestServer({ embedded: true });
    }
  });

  t.after(async () => {
    try {
      await cp?.close();
    } finally {
      await drop();
    }
  });

  t('the same item reported 1,000 times is counted once; raw talk seconds kept beside the minutes', async () => {
    const co = await makeCompany(cp);
    const at = new Date('2026-10-15T12:00:00Z');
    const item = callMinutes(call(co.tenantId, 1), 61, at)!;
    for (let i = 0; i < 1000; i++) await meter(cp, [item]);
    await cp.services.meter.drain();
    const rows = await cp.services.store.db.selectFrom('usage_events').select(['id', 'quantity', 'raw_seconds', 'source_id']).where('tenant_id', '=', co.tenantId).execute();
    assert.equal(rows.map((r) => [Number(r.quantity), Number(r.raw_seconds), r.source_id]), [[2, 61, call(co.tenantId, 1).id]]);
    assert.equal(await monthUsage(cp.services.store.db, '2026-10', [co.tenantId]), [{ tenant_id: co.tenantId, kind: 'call_minute', quantity: '2', raw_seconds: '61', items: 1 }]);
  });

  t('a write that fails and is retried counts once; a re-check is new work and counts again', async () => {
    const co = await makeCompany(cp);
    const at = new Date('2026-10-20T08:00:00Z');
    const item = listVerify({ id: 'chk_meterretry000000000000001', tenant_id: co.tenantId }, 250, at);
    await cp.services.store
      .transaction(async (tx) => {
        await emit(tx, await meterUsage(tx, [item]));
        throw new Error('the work failed after the item was written');
      })
      .catch(() => {});
    await meter(cp, [item]);
    await meter(cp, [item]);
    await meter(cp, [listVerify({ id: 'chk_meterretry000000000000002', tenant_id: co.tenantId }, 250, at)]);
    await cp.services.meter.drain();
    assert.equal(await monthUsage(cp.services.store.db, '2026-10', [co.tenantId]), [{ tenant_id: co.tenantId, kind: 'list_verify', quantity: '500', raw_seconds: null, items: 2 }]);
  });

  t('behind while the meter is stopped, for that month only; current once it has caught up', async () => {
    const co = await makeCompany(cp);
    await cp.services.meter.drain();
    cp.services.meter.pause();
    try {
      await meter(cp, [callMinutes(call(co.tenantId, 2), 30, new Date('2026-09-30T23:59:59.999Z'))!]);
      const behind = await refusal(assertMeterCurrent(cp.services.store, '2026-09'));
      assert.ok(behind, 'refused while an item of September waits');
      assert.is(behind!.code, 'unavailable');
      assert.match(behind!.message, /behind for 2026-09/);
      assert.is(await refusal(assertMeterCurrent(cp.services.store, '2026-08')), null, 'another month is current');
      assert.equal(await monthUsage(cp.services.store.db, '2026-09', [co.tenantId]), []);
    } finally {
      cp.services.meter.resume();
    }
    await cp.services.meter.drain();
    assert.is(await refusal(assertMeterCurrent(cp.services.store, '2026-09')), null);
    assert.equal(await monthUsage(cp.services.store.db, '2026-09', [co.tenantId]), [{ tenant_id: co.tenantId, kind: 'call_minute', quantity: '1', raw_seconds: '30', items: 1 }]);
  });

  t('sums stay exact decimals over many items and batches', async () => {
    const co = await makeCompany(cp);
    const at = new Date('2026-07-01T00:00:00Z');
    const items: UsageItem[] = Array.from({ length: 4500 }, (_, i) => ({
      id: `use_meterexact${i}_ai_second`,
      tenant_id: co.tenantId,
      kind: 'ai_second',
      quantity: 3,
      unit: 'second',
      call_id: null,
      campaign_id: null,
      occurred_at: at,
      source_id: `sess_${i}`,
    }));
    for (let i = 0; i < items.length; i += 1000) await meter(cp, items.slice(i, i + 1000));
    await cp.services.meter.drain();
    assert.equal(await monthUsage(cp.services.store.db, '2026-07', [co.tenantId]), [{ tenant_id: co.tenantId, kind: 'ai_second', quantity: '13500', raw_seconds: null, items: 4500 }]);
  });

  t('a month must be YYYY-MM', async () => {
    for (const bad of ['2026-13', '2026-1', 'now', '']) {
      const e = await refusal(monthUsage(cp.services.store.db, bad));
      assert.is(e?.code, 'unprocessable', bad);
    }
  });

  t.run();
}
