/** Settings: defaults, and a bad value stops the start with a message naming the variable. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { ConfigError, loadConfig } from '../../shared/config.ts';

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

t.run();
