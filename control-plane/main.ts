/**
 * `npm start`: one control-plane instance. With no settings it runs the embedded default
 * (PGlite under ./data, in-process coordination, one media agent on the simulated trunk) and
 * prints its address and, at the first start, the first operator's e-mail and one-time password.
 */
import { randomInt } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_PROTOCOL_PATH } from '../shared/agent-protocol.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { unreachableIn } from '../shared/errors.ts';
// The composition root may import media-agent/ (which otherwise stands alone) to run the embedded default's agent.
import { AGENT_VERSION, AgentClient } from '../media-agent/client.ts';
import { SimulatedTrunk } from '../media-agent/simulated-trunk.ts';
import { startControlPlane, type RunningControlPlane } from './server.ts';

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

// A setting that stops the start (HOST, PORT, VD_METRICS_PORT, VD_DATA_DIR) is one line and exit code 1, no stack.
const cp = await startWhenStoreAnswers(config).catch((err: unknown) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(1);
  }
  throw err;
});
const mode = `${config.DATABASE_URL ? 'Postgres' : `embedded PGlite (${config.VD_DATA_DIR})`}, ${config.REDIS_URL ? 'Redis' : 'in-process'} coordination`;
// Printed, not logged: the person starting the platform must see these once; logs never hold them.
console.log(`control plane listening on ${cp.url} (${mode})`);
console.log(cp.metricsUrl ? `metrics (Prometheus text) on ${cp.metricsUrl}` : 'metrics listener off (VD_METRICS_PORT=off)');
if (cp.bootstrap) {
  console.log(`first operator (platform_owner): ${cp.bootstrap.email}`);
  if (cp.bootstrap.password) console.log(`one-time password: ${cp.bootstrap.password}  (you must change it at first sign-in)`);
  else console.log('password: the one set in VD_BOOTSTRAP_OPERATOR_PASSWORD');
}

const agent = config.VD_EMBEDDED_AGENT ? await startEmbeddedAgent(config, cp) : null;

let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (stopping) process.exit(1);
    stopping = true;
    stop().then(() => process.exit(0), () => process.exit(1));
  });
}

/**
 * Starts the instance. While Postgres cannot be reached (down, restarting, refusing connections
 * while it recovers) the start is tried again, with a line saying so, instead of exiting: an
 * instance restarted during a database outage comes up once the database does. Any other failure
 * stops the start as before.
 */
async function startWhenStoreAnswers(config: Config): Promise<RunningControlPlane> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await startControlPlane(config);
    } catch (err) {
      if (err instanceof ConfigError) throw err; // a setting to fix: trying again cannot help
      const away = unreachableIn(err);
      if (!away) throw err;
      const wait = Math.min(2000, 250 * 2 ** Math.min(attempt, 3));
      console.error(`start: ${away.message}; trying again in ${wait} ms`);
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

/**
 * A plain stop, no drain: the embedded agent hangs up its live calls (each reported as
 * `call.ended` while its socket is still open), closes the socket, then the control plane closes.
 */
async function stop(): Promise<void> {
  if (agent) {
    await agent.trunk.close();
    await agent.client.close();
  }
  await cp.close();
}

/**
 * The embedded default's media agent: an `AgentClient` on a `SimulatedTrunk` (real time, random
 * outcomes), connected to this instance's own `/agent/v1` with its `VD_AGENT_TOKEN` (a random
 * one made at start unless set, so only this process knows it).
 */
async function startEmbeddedAgent(config: Config, cp: RunningControlPlane): Promise<{ client: AgentClient; trunk: SimulatedTrunk }> {
  const nodeId = embeddedNodeId(config, cp.port);
  const log = cp.services.logger.child({ part: 'embedded-agent', node: nodeId });
  const seed = randomInt(2 ** 31);
  // The demo records its answered calls (uploaded to this instance's recording store).
  const recordDir = config.VD_DATA_DIR === 'memory://' ? mkdtempSync(join(tmpdir(), 'vd-agent-recordings-')) : join(config.VD_DATA_DIR, 'agent-recordings');
  mkdirSync(recordDir, { recursive: true });
  const trunk = new SimulatedTrunk({ seed, timeScale: 1, outcome: 'random', recordDir });
  await trunk.start();
  const client = new AgentClient({
    url: ownAgentUrl(config.HOST, cp.port),
    token: config.VD_AGENT_TOKEN,
    nodeId,
    capacity: config.VD_EMBEDDED_AGENT_CAPACITY,
    region: 'local',
    version: AGENT_VERSION,
    trunk,
    log: (level, msg, fields = {}) => log[level](fields, msg),
  });
  client.start();
  void client.resumeUploads(recordDir);
  log.info({ capacity: config.VD_EMBEDDED_AGENT_CAPACITY, seed }, 'embedded media agent started on the simulated trunk');
  return { client, trunk };
}

/**
 * `node_embedded` on the embedded store (one instance only). On a shared Postgres several
 * instances may each run one, and one node id must mean one socket, so the id names the host and
 * port (stable across restarts, unlike the instance id).
 */
function embeddedNodeId(config: Config, port: number): string {
  return config.DATABASE_URL ? `node_embedded_${hostname()}_${port}`.slice(0, 128) : 'node_embedded';
}

/** This instance's agent endpoint, reached over loopback when it listens on every address. */
function ownAgentUrl(host: string, port: number): string {
  const h = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `ws://${h.includes(':') ? `[${h}]` : h}:${port}${AGENT_PROTOCOL_PATH}`;
}
