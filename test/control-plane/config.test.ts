/** Settings: defaults, and a bad value stops the start with a message naming the variable. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { ConfigError, loadConfig } from '../../control-plane/config.ts';
import { startControlPlaneProcess, stopProcess, type ControlPlaneProcess } from '../support/processes.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('settings');

t('defaults: port 8080, embedded store and coordination', () => {
  const c = loadConfig({});
  assert.is(c.PORT, 8080);
  assert.is(c.DATABASE_URL, undefined);
  assert.is(c.REDIS_URL, undefined);
  assert.is(c.VD_DATA_DIR, './data');
  assert.is(c.VD_RATE_LIMIT_PER_SECOND, 200);
  assert.is(c.VD_RATE_LIMIT_BURST, 1000);
  assert.is(c.VD_BODY_LIMIT_BYTES, 10 * 1024 * 1024);
  assert.is(c.VD_EMBEDDED_AGENT, true);
  assert.is(c.VD_EMBEDDED_AGENT_CAPACITY, 20);
  assert.ok(c.VD_AGENT_TOKEN.length >= 16, 'a random agent token is made when none is set');
  assert.is.not(loadConfig({}).VD_AGENT_TOKEN, c.VD_AGENT_TOKEN);
});

t('each bad value is refused with its variable named', () => {
  const bad: Record<string, string> = {
    PORT: 'eighty',
    DATABASE_URL: 'mysql://x',
    REDIS_URL: 'http://x',
    LOG_LEVEL: 'loud',
    VD_BOOTSTRAP_OPERATOR_EMAIL: 'not-an-email',
    VD_BOOTSTRAP_OPERATOR_PASSWORD: 'short',
    VD_RATE_LIMIT_BURST: '-1',
    VD_ALLOW_PRIVATE_TARGETS: 'maybe',
    VD_EMBEDDED_AGENT: 'sometimes',
    VD_EMBEDDED_AGENT_CAPACITY: '-1',
    VD_AGENT_TOKEN: 'short',
  };
  for (const [k, v] of Object.entries(bad)) {
    try {
      loadConfig({ [k]: v });
      assert.unreachable(`${k}=${v} was accepted`);
    } catch (err) {
      assert.instance(err, ConfigError);
      assert.match((err as Error).message, k);
    }
  }
});

t('VD_ALLOW_PRIVATE_TARGETS is refused in production', () => {
  assert.throws(() => loadConfig({ VD_ALLOW_PRIVATE_TARGETS: '1', NODE_ENV: 'production' }), /VD_ALLOW_PRIVATE_TARGETS/);
  assert.is(loadConfig({ VD_ALLOW_PRIVATE_TARGETS: '1', NODE_ENV: 'test' }).VD_ALLOW_PRIVATE_TARGETS, true);
});

t('npm start with a bad value exits 1 and names the variable', () => {
  const r = spawnSync(process.execPath, ['control-plane/main.ts'], { env: { ...process.env, PORT: 'eighty' }, encoding: 'utf8', timeout: 30_000 });
  assert.is(r.status, 1);
  assert.match(r.stderr, /PORT/);
});

/** The nodes the hub logged as registered, from the complete JSON lines of a process's output. */
function registrations(out: string): Array<{ node: string; capacity: number }> {
  return out.split('\n').slice(0, -1).flatMap((line) => {
    if (!line.startsWith('{')) return [];
    const entry = JSON.parse(line) as { msg?: string; node?: string; capacity?: number };
    return entry.msg === 'media node registered' ? [{ node: entry.node!, capacity: entry.capacity! }] : [];
  });
}

t('npm start runs its embedded media agent by default: it registers with the generated token; SIGTERM stops both', async () => {
  let cp: ControlPlaneProcess | undefined;
  try {
    cp = await startControlPlaneProcess({ VD_EMBEDDED_AGENT: '1', VD_EMBEDDED_AGENT_CAPACITY: '7', VD_DATA_DIR: 'memory://', LOG_LEVEL: 'info' });
    const out = cp.output;
    await eventually(() => `a registration; the output so far:\n${out()}`, () => registrations(out()).length > 0, 30_000, 50);
    assert.equal(registrations(out()), [{ node: 'node_embedded', capacity: 7 }]);
    assert.match(out(), /"msg":"embedded media agent started on the simulated trunk"/);
    assert.not.match(out(), /Bearer|"token"/);
    await stopProcess(cp.proc);
    assert.is(cp.proc.exitCode, 0, out());
  } finally {
    await stopProcess(cp?.proc, 'SIGKILL');
  }
});

t('with VD_EMBEDDED_AGENT=0 no agent starts', async () => {
  let cp: ControlPlaneProcess | undefined;
  try {
    cp = await startControlPlaneProcess({ VD_EMBEDDED_AGENT: '0', VD_DATA_DIR: 'memory://', LOG_LEVEL: 'info' });
    // A deliberate pause that proves something does NOT happen: the embedded agent registers
    // within a few milliseconds of the listening line; this gives it ample time not to.
    await sleep(1500);
    assert.equal(registrations(cp.output()), []);
    assert.not.match(cp.output(), /embedded media agent/);
  } finally {
    await stopProcess(cp?.proc);
  }
});

t.run();
