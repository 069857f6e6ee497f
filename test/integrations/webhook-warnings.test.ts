/**
 * A webhook pattern that can match no event the platform emits (issue 27, item 5), over real HTTP
 * on real Postgres and Redis: it is accepted, and the API's answers and the console say so in
 * `warnings`; the console's new-webhook form starts from `vd.>`, which matches every event.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { patternWarnings } from '../../control-plane/webhooks/event-patterns.ts';
import { EVENT_NAMES } from '../../shared/events.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';

const CONNECTORS = '/api/integrations/v1/connectors';
const t = suite('webhook patterns that match nothing are warned of');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let owner: Session;

const NOTHING_FOR = (p: string) => `events "${p}" matches no event the platform sends: event names have three parts, like vd.call.ended (vd.call.* for a group, vd.> for every event)`;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1' } });
  ({ owner } = await makeCompany(cp, 'Patterns Co'));
});

t.after(async () => {
  await cp?.close();
  await drop();
  await deleteRedisPrefix(prefix);
});

t('which patterns match nothing: two parts, four, an unknown group; vd.> and the spec names match', () => {
  assert.equal(patternWarnings(['vd.>', 'vd.call.*', 'vd.*.answered', 'vd.call.answered', '*.*.*'], EVENT_NAMES), []);
  assert.equal(patternWarnings(['vd.*', 'vd.call.answered.x', 'vd.nothing.*', 'vd.call.>'], EVENT_NAMES), [
    NOTHING_FOR('vd.*'),
    NOTHING_FOR('vd.call.answered.x'),
    'events "vd.nothing.*" matches no event the platform sends',
  ]);
});

t('the API accepts such a pattern and says so in warnings (create, read, list, change)', async () => {
  const made = await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { kind: 'webhook', name: 'CRM', url: 'http://127.0.0.1:9/hook', events: ['vd.*', 'vd.journey.>'] } });
  assert.is(made.status, 201, made.text);
  assert.equal(made.body.events, ['vd.*', 'vd.journey.>']);
  assert.equal(made.body.warnings, [NOTHING_FOR('vd.*')]);
  assert.match(made.body.signing_secret, /^whsec_/);
  const id = made.body.id;
  assert.equal((await call(cp.url, 'GET', `${CONNECTORS}/${id}`, { session: owner })).body.warnings, [NOTHING_FOR('vd.*')]);
  const listed = (await call(cp.url, 'GET', CONNECTORS, { session: owner })).body.items.find((c: { id: string }) => c.id === id);
  assert.equal(listed.warnings, [NOTHING_FOR('vd.*')]);
  const fixed = await call(cp.url, 'PATCH', `${CONNECTORS}/${id}`, { session: owner, body: { events: ['vd.>'] } });
  assert.is(fixed.status, 200, fixed.text);
  assert.equal([fixed.body.events, fixed.body.warnings], [['vd.>'], []]);
  const worse = await call(cp.url, 'PATCH', `${CONNECTORS}/${id}`, { session: owner, body: { events: ['vd.calls.*'] } });
  assert.equal(worse.body.warnings, ['events "vd.calls.*" matches no event the platform sends']);
  // Invalid syntax is still refused (422), not warned of.
  assert.is((await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { kind: 'webhook', name: 'X', url: 'http://127.0.0.1:9/x', events: ['vd'] } })).status, 422);
});

t('the console: the form starts from vd.>; a pattern matching nothing is said on creation and on the connection page', async () => {
  const form = await call(cp.url, 'GET', '/console/connections', { session: owner });
  assert.is(form.status, 200);
  assert.match(form.text, /name="events"[^>]*value="vd\.&gt;"|value="vd\.&gt;"[^>]*name="events"/);
  assert.not.match(form.text, /value="vd\.\*"/);
  const headers = { 'content-type': 'application/x-www-form-urlencoded', 'hx-request': 'true', cookie: owner.cookie, 'x-vd-csrf': owner.csrf };
  const post = (path: string, body: Record<string, string>) => call(cp.url, 'POST', path, { raw: new URLSearchParams(body).toString(), headers });
  const made = await post('/console/connections/webhook', { name: 'Console CRM', url: 'http://127.0.0.1:9/c', events: 'vd.* vd.call.ended' });
  assert.is(made.status, 200, made.text);
  assert.match(made.text, /Webhook Console CRM is created/);
  assert.match(made.text, /events &quot;vd\.\*&quot; matches no event the platform sends/);
  const id = /\/console\/connections\/(con_[A-Za-z0-9]+)/.exec(made.text)![1];
  const page = await call(cp.url, 'GET', `/console/connections/${id}`, { session: owner });
  assert.match(page.text, /id="event-warnings"/);
  assert.match(page.text, /events &quot;vd\.\*&quot; matches no event the platform sends/);
  const good = await post('/console/connections/webhook', { name: 'Everything', url: 'http://127.0.0.1:9/e', events: 'vd.>' });
  assert.not.match(good.text, /matches no event/);
});

t.run();
