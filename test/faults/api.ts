/**
 * The fault suite's HTTP client: the operator's and company admins' requests, each with a time
 * limit (an instance may be SIGSTOPped under a request) and, where asked, tried again on another
 * instance until an answer that is not a transport failure or a 5xx.
 */
import type { Session } from '../support/http.ts';
import { eventually } from '../support/eventually.ts';
import type { Instance } from './instances.ts';

export type Answer = { status: number; body: any; text: string; headers: Headers };

export async function request(base: string, method: string, path: string, opts: { session?: Session; body?: unknown; timeoutMs?: number } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.session) {
    headers.cookie = opts.session.cookie;
    if (method !== 'GET') headers['x-vd-csrf'] = opts.session.csrf;
  }
  const res = await fetch(base + path, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: AbortSignal.timeout(opts.timeoutMs ?? 5000),
  });
  const text = await res.text();
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, body, text, headers: res.headers };
}

export async function signIn(base: string, email: string, password: string): Promise<Session> {
  const a = await request(base, 'POST', '/api/auth/v1/sign-in', { body: { email, password } });
  if (a.status !== 200) throw new Error(`sign-in of ${email} failed: ${a.status} ${a.text}`);
  const cookies = a.headers.getSetCookie().map((c) => c.split(';')[0]);
  const token = cookies.find((c) => c.startsWith('vd_session='))!.slice('vd_session='.length);
  const csrf = cookies.find((c) => c.startsWith('vd_csrf='))!.slice('vd_csrf='.length);
  return { cookie: cookies.join('; '), csrf, token };
}

/**
 * Sends the request to a healthy instance (a different one after each failure) until it gets an
 * answer below 500, or `deadlineMs` passes (then throws with the last failure). `pick` chooses
 * among the healthy instances.
 */
export async function persist(
  instances: Instance[],
  pick: (n: number) => number,
  method: string,
  path: string,
  opts: { session?: Session; body?: unknown; deadlineMs?: number; ok?: (a: Answer) => boolean } = {},
): Promise<Answer & { tries: number; via: string }> {
  let last = '';
  let tries = 0;
  let via = '';
  const answer = await eventually(() => `${method} ${path} to get a good answer (${tries} tries); last: ${last}`, async () => {
    const healthy = instances.filter((i) => i.healthy);
    if (healthy.length === 0) return null;
    const inst = healthy[pick(healthy.length)];
    tries++;
    try {
      const a = await request(inst.url, method, path, { session: opts.session, body: opts.body, timeoutMs: 5000 });
      if (a.status < 500 && (!opts.ok || opts.ok(a))) {
        via = inst.name;
        return a;
      }
      last = `${inst.name}: ${a.status} ${a.text.slice(0, 200)}`;
    } catch (err) {
      last = `${inst.name}: ${(err as Error).message}`;
    }
    return null;
  }, opts.deadlineMs ?? 60_000, 300);
  return { ...answer, tries, via };
}
