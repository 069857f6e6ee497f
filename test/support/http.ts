/**
 * A small HTTP client for tests over real HTTP: sessions keep their cookies and send the CSRF
 * header the way a browser page would; keys send `Authorization: Bearer`.
 */

export type Session = { cookie: string; csrf: string; token: string };

export type Call = {
  body?: unknown;
  /** Sent as is (a string or bytes), instead of JSON. */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
  session?: Session;
  /** Leave the CSRF header off (or set `headers['x-vd-csrf']` to send a wrong one). */
  noCsrf?: boolean;
  key?: string;
};

export type Answer = { status: number; headers: Headers; body: any; text: string };

/** One request to `base`; JSON answers are parsed into `body`. */
export async function call(base: string, method: string, path: string, opts: Call = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | Uint8Array | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  if (opts.session) {
    headers.cookie = opts.session.cookie;
    if (!opts.noCsrf && !['GET', 'HEAD'].includes(method)) headers['x-vd-csrf'] ??= opts.session.csrf;
  }
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: any = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** Signs in and returns the session's cookies; throws unless the answer is 200. */
export async function signIn(base: string, email: string, password: string): Promise<Session & { answer: Answer }> {
  const a = await call(base, 'POST', '/api/auth/v1/sign-in', { body: { email, password } });
  if (a.status !== 200) throw new Error(`sign-in failed: ${a.status} ${a.text}`);
  const cookies = a.headers.getSetCookie().map((c) => c.split(';')[0]);
  const token = cookies.find((c) => c.startsWith('vd_session='))!.slice('vd_session='.length);
  const csrf = cookies.find((c) => c.startsWith('vd_csrf='))!.slice('vd_csrf='.length);
  return { cookie: cookies.join('; '), csrf, token, answer: a };
}
