/** The list import and its check on the embedded store (PGlite, in-process coordination): the default set-up. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { eventually } from '../support/eventually.ts';
import { call } from '../support/http.ts';
import { makeCompany, makeKey } from '../support/fixtures.ts';
import { startTestServer } from '../support/server.ts';

const t = suite('inbound leads and list checks, embedded');
let cp: RunningControlPlane;

t.before(async () => {
  cp = await startTestServer({ embedded: true });
});

t.after(async () => {
  await cp?.close();
});

t('leads are stored, checked and counted once on PGlite', async () => {
  const co = await makeCompany(cp);
  const { key } = await makeKey(cp.url, co.owner, ['leads:write']);
  await call(cp.url, 'POST', '/api/integrations/v1/inbound/dnc', { key: (await makeKey(cp.url, co.owner, ['dnc:write'])).key, body: { numbers: ['+13125550102'] } });
  const list = await call(cp.url, 'POST', '/api/core/v1/lists', { session: co.owner, body: { name: 'Embedded' } });
  const leads = Array.from({ length: 2500 }, (_, i) => ({ phone_number: `3125${String(550000 + i).padStart(6, '0')}`, external_id: `e${i}` }));
  const r = await call(cp.url, 'POST', '/api/integrations/v1/inbound/leads', { key, body: { list_id: list.body.id, leads: [...leads, leads[0]] } });
  assert.is(r.status, 200, r.text);
  assert.equal({ created: r.body.created, duplicates: r.body.duplicates }, { created: 2500, duplicates: 1 });
  const check = await eventually('the check done', async () => {
    const c = await call(cp.url, 'GET', `/api/core/v1/lists/${list.body.id}/checks/${r.body.check_id}`, { session: co.owner });
    return c.body.status === 'done' && c.body;
  }, 30_000);
  assert.equal({ checked: check.checked, callable: check.callable, rejected: check.rejected }, { checked: 2500, callable: 2499, rejected: 1 });
  await cp.services.checks.finish(r.body.check_id);
  const usage = await cp.services.store.db.selectFrom('usage_events').select(['kind', 'quantity']).where('tenant_id', '=', co.tenantId).execute();
  assert.equal(usage.map((u) => [u.kind, Number(u.quantity)]), [['list_verify', 2500]]);
});

t.run();
