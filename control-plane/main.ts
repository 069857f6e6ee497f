/**
 * `npm start`: one control-plane instance. With no settings it runs the embedded default
 * (PGlite under ./data, in-process coordination) and prints its address and, at the first start,
 * the first operator's e-mail and one-time password.
 */
import { ConfigError, loadConfig } from '../shared/config.ts';
import { startControlPlane } from './server.ts';

let config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(1);
  }
  throw err;
}

const cp = await startControlPlane(config);
const mode = `${config.DATABASE_URL ? 'Postgres' : `embedded PGlite (${config.VD_DATA_DIR})`}, ${config.REDIS_URL ? 'Redis' : 'in-process'} coordination`;
// Printed, not logged: the person starting the platform must see these once; logs never hold them.
console.log(`control plane listening on ${cp.url} (${mode})`);
if (cp.bootstrap) {
  console.log(`first operator (platform_owner): ${cp.bootstrap.email}`);
  if (cp.bootstrap.password) console.log(`one-time password: ${cp.bootstrap.password}  (you must change it at first sign-in)`);
  else console.log('password: the one set in VD_BOOTSTRAP_OPERATOR_PASSWORD');
}

let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (stopping) process.exit(1);
    stopping = true;
    cp.close().then(() => process.exit(0), () => process.exit(1));
  });
}
