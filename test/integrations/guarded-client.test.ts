/**
 * The guarded outbound client, against a real HTTP receiver on 127.0.0.1 that counts requests
 * and TCP connections: with private targets off, no refused form may reach it (not even a TCP
 * connection); with them on, answers, redirects, errors, time and size limits are reported.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { refusedForms } from '../support/refused-addresses.ts';
import {
  OutboundClient,
  checkTargetAddress,
  checkTargetUrl,
  clientFromConfig,
  isAllowedAddress,
  isPublicAddress,
  type LookupFn,
} from '../../control-plane/infra/outbound-http/guarded-client.ts';
import { sleep } from '../support/sleep.ts';

// ---- the receiver -------------------------------------------------------------------------

const seen = { connections: 0, requests: 0, paths: [] as string[], bodies: [] as string[], headers: [] as IncomingMessage['headers'][] };
function resetSeen(): void {
  seen.connections = 0;
  seen.requests = 0;
  seen.paths = [];
  seen.bodies = [];
  seen.headers = [];
}

const HUGE = Buffer.alloc(5 * 1024 * 1024, 'x');
const server: Server = createServer((req, res) => {
  seen.requests++;
  seen.paths.push(req.url ?? '');
  seen.headers.push(req.headers);
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d: string) => (body += d));
  req.on('end', () => {
    seen.bodies.push(body);
    res.on('error', () => {}); // the client hangs up on /huge on purpose
    switch (req.url) {
      case '/redirect':
        res.writeHead(302, { location: '/ok' }).end();
        break;
      case '/fail':
        res.writeHead(500, { 'content-type': 'text/plain' }).end('broken');
        break;
      case '/busy':
        res.writeHead(503, { 'retry-after': '120' }).end('later');
        break;
      case '/hang':
        break; // never answers
      case '/slow':
        setTimeout(() => res.writeHead(200).end('slow'), 300);
        break;
      case '/trickle':
        res.writeHead(200).write('partial'); // headers, then a body that never ends
        break;
      case '/huge':
        res.writeHead(200, { 'content-type': 'text/plain' }).end(HUGE);
        break;
      default:
        res.writeHead(200, { 'content-type': 'text/plain' }).end('hello ü');
    }
  });
});
server.on('connection', (socket) => {
  seen.connections++;
  socket.on('error', () => {});
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const P = (server.address() as AddressInfo).port;

test.after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A lookup that answers from a fixed table and records the names asked. */
function fakeDns(answers: Record<string, string[]>): LookupFn & { asked: string[] } {
  const asked: string[] = [];
  const fn = async (hostname: string) => {
    asked.push(hostname);
    const list = answers[hostname];
    if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return list.map((address) => ({ address, family: (address.includes(':') ? 6 : 4) as 4 | 6 }));
  };
  return Object.assign(fn, { asked });
}

const refused = refusedForms(P);

test(`${refused.length} refused forms: refused by the check and by post, the receiver sees nothing`, async () => {
  assert.ok(refused.length >= 35);
  const dns = fakeDns({}); // would answer nothing anyway: it must not even be asked
  const client = new OutboundClient({ allowPrivate: false, lookup: dns });
  resetSeen();
  try {
    for (const [url, reason] of refused) {
      const checked = checkTargetUrl(url, { allowPrivate: false });
      assert.is(checked.ok, false, `checkTargetUrl accepted ${url}`);
      if (!checked.ok) assert.match(checked.reason, reason, `${url}: ${checked.reason}`);
      const result = await client.post(url, '{"event":"x"}', { 'content-type': 'application/json' });
      assert.is(result.kind, 'refused_address', `post to ${url} was ${result.kind}`);
    }
  } finally {
    await client.close();
  }
  assert.equal(dns.asked, []);
  assert.is(seen.requests, 0);
  assert.is(seen.connections, 0);
});

test('ordinary public addresses pass the syntax check; the fragment is dropped', () => {
  for (const url of ['https://hooks.example.com/x?y=1', 'http://example.com:8080/a', 'https://xn--mlaut-jva.de/', 'https://example.com./']) {
    assert.ok(checkTargetUrl(url, { allowPrivate: false }).ok, url);
  }
  const r = checkTargetUrl('https://hooks.example.com/x#frag', { allowPrivate: false });
  assert.ok(r.ok && r.url.href === 'https://hooks.example.com/x');
  assert.ok(checkTargetUrl(`http://127.0.0.1:${P}/`, { allowPrivate: true }).ok, 'numeric allowed with private targets on');
  assert.ok(checkTargetUrl('http://intranet/', { allowPrivate: true }).ok);
});

test('a name that resolves to loopback is refused at connect time, without a connection', async () => {
  const dns = fakeDns({ 'hooks.example.com': ['127.0.0.1'] });
  const client = new OutboundClient({ allowPrivate: false, lookup: dns });
  resetSeen();
  const r = await client.post(`http://hooks.example.com:${P}/ok`, 'x', {});
  await client.close();
  assert.is(r.kind, 'refused_address');
  assert.ok(dns.asked.length > 0, 'the guarded lookup was used');
  assert.is(seen.connections, 0);
  assert.is(seen.requests, 0);
});

test('DNS rebinding: public at save time, loopback at send time, is refused', async () => {
  let calls = 0;
  const rebinding: LookupFn = async () => [{ address: calls++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }];
  const saved = await checkTargetAddress(`http://hooks.example.com:${P}/ok`, { allowPrivate: false, lookup: rebinding });
  assert.ok(saved.ok, 'accepted at save time');
  const client = new OutboundClient({ allowPrivate: false, lookup: rebinding });
  resetSeen();
  const r = await client.post(`http://hooks.example.com:${P}/ok`, 'x', {});
  await client.close();
  assert.is(r.kind, 'refused_address');
  assert.ok(calls >= 2);
  assert.is(seen.connections, 0);
  assert.is(seen.requests, 0);
});

test('mixed answers (one public, one loopback) are refused whole', async () => {
  const dns = fakeDns({ 'hooks.example.com': ['93.184.216.34', '127.0.0.1'], 'v6.example.com': ['2606:2800:220:1::1', '::1'] });
  const client = new OutboundClient({ allowPrivate: false, lookup: dns });
  resetSeen();
  const a = await client.post(`http://hooks.example.com:${P}/ok`, 'x', {});
  const b = await client.post(`http://v6.example.com:${P}/ok`, 'x', {});
  await client.close();
  assert.is(a.kind, 'refused_address');
  assert.is(b.kind, 'refused_address');
  assert.is(seen.connections, 0);
  const saved = await checkTargetAddress('https://hooks.example.com/', { allowPrivate: false, lookup: dns });
  assert.is(saved.ok, false);
});

test('even with private targets on, unspecified and other odd addresses are refused before connecting', async () => {
  const client = new OutboundClient({ allowPrivate: true, lookup: fakeDns({ 'any.example.com': ['0.0.0.0'] }) });
  resetSeen();
  for (const url of [`http://0.0.0.0:${P}/`, `http://[::]:${P}/`, `http://any.example.com:${P}/`]) {
    const r = await client.post(url, 'x', {});
    assert.is(r.kind, 'refused_address', url);
  }
  await client.close();
  assert.is(seen.connections, 0);
});

// ---- with private targets on: the receiver answers --------------------------------------------

test('private targets on: an answer is reported with status, start of body, Retry-After, peer', async () => {
  const client = clientFromConfig({ VD_ALLOW_PRIVATE_TARGETS: true });
  resetSeen();
  const ok = await client.post(`http://127.0.0.1:${P}/ok#ignored`, '{"a":1}', { 'content-type': 'application/json', 'x-signature': 'sig' });
  const busy = await client.post(`http://127.0.0.1:${P}/busy`, 'x', {});
  await client.close();
  assert.is(ok.kind, 'answered');
  if (ok.kind === 'answered') {
    assert.is(ok.status, 200);
    assert.is(ok.bodyStart, 'hello ü');
    assert.is(ok.retryAfter, null);
    assert.is(ok.remoteAddress, '127.0.0.1');
    assert.ok(ok.durationMs >= 0);
  }
  assert.is(busy.kind === 'answered' && busy.status, 503);
  assert.is(busy.kind === 'answered' && busy.retryAfter, '120');
  assert.equal(seen.paths, ['/ok', '/busy']);
  assert.is(seen.bodies[0], '{"a":1}');
  assert.is(seen.headers[0]['x-signature'], 'sig');
});

test('a name resolved by the injected lookup reaches the receiver when private targets are on', async () => {
  const client = new OutboundClient({ allowPrivate: true, lookup: fakeDns({ 'receiver.test': ['127.0.0.1'] }) });
  resetSeen();
  const r = await client.post(`http://receiver.test:${P}/ok`, 'x', {});
  await client.close();
  assert.is(r.kind === 'answered' && r.status, 200);
  assert.is(seen.headers[0].host, `receiver.test:${P}`);
});

// ---- the start deadline: checked when the request is about to be written -----------------

test('startBy already past: not_sent, and not even a connection is made', async () => {
  const client = new OutboundClient({ allowPrivate: true });
  resetSeen();
  const r = await client.post(`http://127.0.0.1:${P}/ok`, 'x', {}, { startBy: performance.now() - 1 });
  await client.close();
  assert.is(r.kind, 'not_sent', JSON.stringify(r));
  assert.is(seen.connections, 0);
  assert.is(seen.requests, 0);
});

test('startBy passes while the event loop is stalled before the request is written: not_sent, no request arrives', async () => {
  // The deadline is still ahead when post is called; the name lookup then blocks the event loop
  // past it (as a loaded machine can), and the connection opens afterwards.
  const client = new OutboundClient({
    allowPrivate: true,
    lookup: async () => {
      const until = performance.now() + 250;
      while (performance.now() < until);
      return [{ address: '127.0.0.1', family: 4 }];
    },
  });
  resetSeen();
  const r = await client.post(`http://receiver.test:${P}/ok`, 'x', {}, { startBy: performance.now() + 100 });
  // A deliberate pause that proves something does NOT happen: nothing reaches the receiver later.
  await sleep(100);
  await client.close();
  assert.is(r.kind, 'not_sent', JSON.stringify(r));
  assert.is(seen.requests, 0, 'not a byte of the request was written');
});

test('startBy passes while the request waits for a pooled socket: not_sent; a request within its deadline goes out', async () => {
  const client = new OutboundClient({ allowPrivate: true, connectionsPerOrigin: 1 });
  resetSeen();
  // The only socket is busy for 300 ms; the second request's deadline is 100 ms away.
  const first = client.post(`http://127.0.0.1:${P}/slow`, 'a', {}, { startBy: performance.now() + 5000 });
  const second = client.post(`http://127.0.0.1:${P}/ok`, 'b', {}, { startBy: performance.now() + 100 });
  const [a, b] = await Promise.all([first, second]);
  assert.is(a.kind === 'answered' && a.status, 200, JSON.stringify(a));
  assert.is(b.kind, 'not_sent', JSON.stringify(b));
  assert.equal(seen.paths, ['/slow']);
  // The client goes on working after a request it did not send.
  const c = await client.post(`http://127.0.0.1:${P}/ok`, 'c', {}, { startBy: performance.now() + 5000 });
  await client.close();
  assert.is(c.kind === 'answered' && c.status, 200, JSON.stringify(c));
  assert.equal(seen.paths, ['/slow', '/ok']);
});

test('a redirect is returned as is and not followed', async () => {
  const client = new OutboundClient({ allowPrivate: true });
  resetSeen();
  const r = await client.post(`http://127.0.0.1:${P}/redirect`, 'x', {});
  await client.close();
  assert.is(r.kind === 'answered' && r.status, 302);
  assert.is(seen.requests, 1);
  assert.equal(seen.paths, ['/redirect']);
});

test('a 500 is returned as answered', async () => {
  const client = new OutboundClient({ allowPrivate: true });
  const r = await client.post(`http://127.0.0.1:${P}/fail`, 'x', {});
  await client.close();
  assert.is(r.kind === 'answered' && r.status, 500);
  assert.is(r.kind === 'answered' && r.bodyStart, 'broken');
});

test('a closed port is connection_refused', async () => {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const closedPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  const client = new OutboundClient({ allowPrivate: true });
  const r = await client.post(`http://127.0.0.1:${closedPort}/`, 'x', {});
  await client.close();
  assert.is(r.kind, 'connection_refused', JSON.stringify(r));
});

test('a receiver that never answers is a timeout after timeoutMs', async () => {
  const client = new OutboundClient({ allowPrivate: true, timeoutMs: 300 });
  const started = Date.now();
  const r = await client.post(`http://127.0.0.1:${P}/hang`, 'x', {});
  const took = Date.now() - started;
  await client.close();
  assert.is(r.kind, 'timeout');
  assert.ok(took >= 250 && took < 3000, `took ${took} ms`);
});

test('an answer whose body never ends is a timeout too: the limit covers the body', async () => {
  const client = new OutboundClient({ allowPrivate: true, timeoutMs: 300 });
  const started = Date.now();
  const r = await client.post(`http://127.0.0.1:${P}/trickle`, 'x', {});
  const took = Date.now() - started;
  await client.close();
  assert.is(r.kind, 'timeout', JSON.stringify(r));
  assert.ok(took >= 250 && took < 3000, `took ${took} ms`);
});

test('a huge answer: status reported, only the start kept, and the call returns promptly', async () => {
  const client = new OutboundClient({ allowPrivate: true, keepBytes: 100 });
  const started = Date.now();
  const r = await client.post(`http://127.0.0.1:${P}/huge`, 'x', {});
  const took = Date.now() - started;
  await client.close();
  assert.is(r.kind === 'answered' && r.status, 200);
  assert.is(r.kind === 'answered' && r.bodyStart, 'x'.repeat(100));
  assert.ok(took < 2000, `took ${took} ms`);
});

test('credentials and other schemes stay refused with private targets on', async () => {
  const client = new OutboundClient({ allowPrivate: true });
  resetSeen();
  for (const url of [`http://user:pass@127.0.0.1:${P}/`, `http://user@127.0.0.1:${P}/`, `ftp://127.0.0.1:${P}/`, 'file:///etc/passwd']) {
    const r = await client.post(url, 'x', {});
    assert.is(r.kind, 'refused_address', url);
  }
  await client.close();
  assert.is(seen.connections, 0);
});

test('keep-alive: many POSTs share a few pooled connections', async () => {
  const client = new OutboundClient({ allowPrivate: true, connectionsPerOrigin: 16 });
  resetSeen();
  const total = 2000;
  let next = 0;
  let answered = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < total) {
        next++;
        const r = await client.post(`http://127.0.0.1:${P}/ok`, '{"n":1}', { 'content-type': 'application/json' });
        if (r.kind === 'answered' && r.status === 200) answered++;
      }
    }),
  );
  const secs = (performance.now() - started) / 1000;
  await client.close();
  assert.is(answered, total);
  assert.ok(seen.connections <= 16, `${seen.connections} connections`);
  console.log(`    keep-alive: ${total} POSTs in ${secs.toFixed(2)} s (${Math.round(total / secs)}/s) over ${seen.connections} connections`);
});

// ---- save-time check and address classes ------------------------------------------------------

test('checkTargetAddress: public accepted, private refused, unresolvable accepted', async () => {
  const pub = await checkTargetAddress('https://hooks.example.com/x', { allowPrivate: false, lookup: fakeDns({ 'hooks.example.com': ['93.184.216.34'] }) });
  assert.ok(pub.ok);
  const priv = await checkTargetAddress('https://hooks.example.com/x', { allowPrivate: false, lookup: fakeDns({ 'hooks.example.com': ['10.1.2.3'] }) });
  assert.is(priv.ok, false);
  if (!priv.ok) assert.match(priv.reason, /private/);
  const missing = await checkTargetAddress('https://hooks.example.com/x', { allowPrivate: false, lookup: fakeDns({}) });
  assert.ok(missing.ok);
  const syntax = await checkTargetAddress('http://localhost/', { allowPrivate: false, lookup: fakeDns({}) });
  assert.is(syntax.ok, false);
  const allowed = await checkTargetAddress('https://hooks.example.com/x', { allowPrivate: true, lookup: fakeDns({ 'hooks.example.com': ['10.1.2.3'] }) });
  assert.ok(allowed.ok);
});

test('isPublicAddress and isAllowedAddress', () => {
  const cases: Array<[string, boolean]> = [
    ['8.8.8.8', true],
    ['93.184.216.34', true],
    ['2001:4860:4860::8888', true],
    ['::ffff:8.8.8.8', true],
    ['::8.8.8.8', false], // IPv4-compatible, not IPv4-mapped: no public address
    ['::ffff:10.0.0.1', false],
    ['::ffff:127.0.0.1', false],
    ['2001:db8::1', false],
    ['64:ff9b::7f00:1', false],
    ['::7f00:1', false],
    ['::1', false],
    ['::', false],
    ['127.0.0.1', false],
    ['10.0.0.1', false],
    ['172.16.0.1', false],
    ['192.168.1.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['255.255.255.255', false],
    ['224.0.0.1', false],
    ['198.18.0.1', false],
    ['fe80::1', false],
    ['fc00::1', false],
    ['2002::1', false],
    ['2001::1', false],
    ['127.1', false],
    ['not an ip', false],
    ['', false],
  ];
  for (const [ip, expected] of cases) assert.is(isPublicAddress(ip), expected, ip);
  assert.ok(isAllowedAddress('127.0.0.1', true));
  assert.ok(isAllowedAddress('::ffff:192.168.0.1', true));
  assert.ok(isAllowedAddress('fe80::1', true));
  assert.ok(!isAllowedAddress('127.0.0.1', false));
  assert.ok(!isAllowedAddress('0.0.0.0', true));
  assert.ok(!isAllowedAddress('224.0.0.1', true));
});

test.run();
