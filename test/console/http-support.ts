/**
 * The instance shared by the console-over-HTTP suites (console-operator-http.test.ts and
 * console-company-http.test.ts): a real control plane on real Postgres and Redis with a small
 * general body limit, private webhook targets allowed and an agent token, two operators
 * (platform_owner, platform_support) and one company; and the console requests as htmx sends
 * them. Each suite calls `startConsole` in its before and `stopConsole` in its after; the `let`
 * exports are live bindings, set by `startConsole`.
 */
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { makeCompany, makeOperator } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';

export let cp: RunningControlPlane;
export let owner: Session;
export let support: Session;
export let company: { tenantId: string; owner: Session };
export const BODY_LIMIT = 4096;
export const AGENT_TOKEN = 'agent-token-for-console-tests-0123456789';
let drop: () => Promise<void> = async () => {};
let prefix = '';

/** A console request as htmx sends it (form body, CSRF header from the session). */
export function post(path: string, session: Session | null, form: Record<string, string> = {}, opts: { csrf?: string | null } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', 'hx-request': 'true' };
  if (session) headers.cookie = session.cookie;
  const csrf = opts.csrf === undefined ? session?.csrf : opts.csrf;
  if (csrf) headers['x-vd-csrf'] = csrf;
  return call(cp.url, 'POST', path, { raw: new URLSearchParams(form).toString(), headers });
}

export const get = (path: string, session: Session | null) => call(cp.url, 'GET', path, session ? { session } : {});

export async function startConsole() {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  // Private targets: the webhook receiver of a test listens on 127.0.0.1.
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_BODY_LIMIT_BYTES: String(BODY_LIMIT), VD_ALLOW_PRIVATE_TARGETS: '1', VD_AGENT_TOKEN: AGENT_TOKEN } });
  owner = await makeOperator(cp, ['platform_owner']);
  support = await makeOperator(cp, ['platform_support']);
  company = await makeCompany(cp, 'Console Http Co');
}

export async function stopConsole() {
  try {
    await cp?.close();
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
}
