/**
 * The store out of reach, over real HTTP and a real Postgres reached through a TCP relay the test
 * can cut (as a restart, a failover or a network fault cuts it): requests that need the store
 * answer the spec's 503 `unavailable` with Retry-After in the error shape, never 500; `/health`
 * still answers; once the store is back the same requests answer as before, with nothing lost.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { openPostgres, storeError } from '../../control-plane/infra/db/store.ts';
import { coordinatorError } from '../../control-plane/infra/coordination/redis.ts';
import { Unreachable } from '../../shared/errors.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call, signIn, type Answer, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { eventually } from '../support/eventually.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('store out of reach');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let owner: Session;

/** A TCP relay to the local Postgres that can be cut (every connection closed, none accepted) and restored on the same port. */
class Relay {
  #server: Server | null = null;
  #sockets = new Set<Socket>();
  port = 0;
  readonly target: { host: string; port: number };
  constructor(target: { host: string; port: number }) {
    this.target = target;
  }
  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.#server = server;
  }
  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    for (const s of this.#sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const relay = new Relay({ host: '127.0.0.1', port: 5432 });

function assertUnavailable(a: Answer) {
  assert.is(a.status, 503, `${a.status} ${a.text}`);
  assert.equal(Object.keys(a.body), ['error']);
  assert.is(a.body.error.code, 'unavailable');
  assert.type(a.body.error.message, 'string');
  assert.is(a.headers.get('retry-after'), '1');
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  await relay.open();
  const url = new URL(db.url);
  url.port = String(relay.port);
  prefix = testRedisPrefix();
  // No adoption sweep: an actor is owned only once it is sent an event (the claim test below).
  cp = await startTestServer({ databaseUrl: url.toString(), redisPrefix: prefix, runtime: { adoptEveryMs: 3_600_000 } });
  owner = await signIn(cp.url, OPERATOR_EMAIL, OPERATOR_PASSWORD);
});

t.after(async () => {
  try {
    await cp?.close().catch(() => {});
    await relay.cut();
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

t('the ports classify: connection failures of Postgres and Redis are Unreachable (retryable), other failures pass as they are', () => {
  const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });
  const away = (err: unknown, port: (e: unknown) => unknown = storeError) => {
    const got = port(err);
    return got instanceof Unreachable && got.retryable && got.cause === err;
  };
  assert.ok(away(coded('ECONNREFUSED')));
  assert.ok(away(coded('57P01', 'terminating connection due to administrator command')));
  assert.ok(away(coded('08006')), 'SQLSTATE class 08');
  assert.ok(away(new Error('Connection terminated unexpectedly')));
  assert.ok(away(new Error('timeout exceeded when trying to connect')));
  assert.ok(away(new Error('outer', { cause: coded('ECONNRESET') })), 'a wrapped cause');
  assert.ok(away(new AggregateError([coded('ECONNREFUSED')], 'all addresses failed')), 'one of several');
  assert.is((storeError(coded('ECONNREFUSED')) as Unreachable).service, 'store');
  for (const other of [coded('23505', 'duplicate key value violates unique constraint'), coded('40P01', 'deadlock detected'), new TypeError('cannot read properties of undefined')]) {
    assert.is(storeError(other), other);
    assert.is(coordinatorError(other), other);
  }
  assert.ok(away(new Error('Connection is closed.'), coordinatorError), "ioredis's word for a closed link");
  assert.ok(away(new Error('Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.'), coordinatorError));
  assert.ok(away(coded('ECONNREFUSED'), coordinatorError));
  assert.is((coordinatorError(coded('ECONNREFUSED')) as Unreachable).service, 'coordinator');
  assert.is(storeError(new Error('Connection is closed.')) instanceof Unreachable, false, "ioredis's words are the coordinator's only");
  const once = storeError(coded('ECONNREFUSED'));
  assert.is(storeError(once), once, 'classified once');
});

t('the store port: a statement on a Postgres that refuses connections fails with Unreachable (retryable, Retry-After 1)', async () => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as { port: number }).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const store = openPostgres(`postgres://postgres@127.0.0.1:${port}/test`, 1);
  try {
    const err = await store.db.selectFrom('companies').select('id').execute().then(() => null, (e: unknown) => e);
    assert.instance(err, Unreachable);
    assert.is((err as Unreachable).service, 'store');
    assert.is((err as Unreachable).retryable, true);
    assert.is((err as Unreachable).retryAfterSeconds, 1);
    const inTx = await store.transaction(async (tx) => tx.selectFrom('companies').select('id').execute()).then(() => null, (e: unknown) => e);
    assert.instance(inTx, Unreachable, 'a transaction too');
  } finally {
    await store.close();
  }
});

t('while the store is cut: reads and writes answer 503 unavailable with Retry-After, /health answers 200', async () => {
  const before = await call(cp.url, 'GET', '/api/platform/tenants', { session: owner });
  assert.is(before.status, 200, before.text);
  await relay.cut();
  try {
    assertUnavailable(await call(cp.url, 'GET', '/api/platform/tenants', { session: owner }));
    assertUnavailable(
      await call(cp.url, 'POST', '/api/platform/tenants', {
        session: owner,
        body: { name: 'Made during the outage', slug: 'made-during-outage', plan: 'standard', owner: { email: 'outage-owner@example.com', name: 'Olive' } },
      }),
    );
    assertUnavailable(await call(cp.url, 'POST', '/api/auth/v1/sign-in', { body: { email: OPERATOR_EMAIL, password: OPERATOR_PASSWORD } }));
    const ready = await call(cp.url, 'GET', '/ready');
    assert.is(ready.status, 503, ready.text);
    assert.is((await call(cp.url, 'GET', '/health')).status, 200);
  } finally {
    await relay.open();
  }
});

t('an event for an actor nobody owns while the store is cut: the claim fails and the send rejects at once with Unreachable (not retried until its time limit)', async () => {
  const made = await call(cp.url, 'POST', '/api/platform/tenants', {
    session: owner,
    body: { name: 'Unowned', slug: 'unowned-actor', plan: 'standard', owner: { email: 'unowned-owner@example.com', name: 'Una' } },
  });
  assert.is(made.status, 201, made.text);
  const id = made.body.tenant.id as string;
  assert.not.ok(cp.services.runtime.owns('company', id), 'not owned before the event');
  await relay.cut();
  try {
    const got = await cp.services.runtime.send('company', id, { type: 'SUSPEND', reason: 'store outage test', by: { kind: 'system', id: null, email: null } }, 60_000).then(
      (reply) => ({ reply }),
      (err: unknown) => ({ err }),
    );
    assert.ok('err' in got, `rejected, not answered: ${JSON.stringify(got)}`);
    assert.instance(got.err, Unreachable);
  } finally {
    await relay.open();
  }
});

t('once the store is back the same requests answer, and the write refused during the outage was not half-made', async () => {
  let last: Answer | null = null;
  const list = await eventually(() => `the tenants list answered 200; the last answer: ${last?.status} ${last?.text}`, async () => {
    last = await call(cp.url, 'GET', '/api/platform/tenants', { session: owner });
    return last.status === 200 && last;
  }, 20_000, 100);
  assert.not.ok(
    list.body.items.some((x: { name: string }) => x.name === 'Made during the outage'),
    'nothing of the refused creation was stored',
  );
  const made = await call(cp.url, 'POST', '/api/platform/tenants', {
    session: owner,
    body: { name: 'Made during the outage', slug: 'made-during-outage', plan: 'standard', owner: { email: 'outage-owner@example.com', name: 'Olive' } },
  });
  assert.is(made.status, 201, made.text);
  assert.is((await call(cp.url, 'GET', '/ready')).status, 200);
});

t.run();
