/**
 * The media agent process (one per media node): `node media-agent/main.ts`, settings from the
 * environment (media-agent/config.ts). The first SIGTERM (or SIGINT) drains for shutdown and
 * exits 0 once the live calls have ended. A second one hangs every call up now (CANCEL or BYE),
 * reports their ends and exits within a few seconds: 0 when every call ended, 1 when some did not
 * (the trunk could not be reached). A third exits at once (1).
 */
import { mkdirSync } from 'node:fs';
import { pino } from 'pino';
import { AGENT_VERSION, AgentClient } from './client.ts';
import { loadAgentConfig } from './config.ts';
import { SimulatedTrunk } from './simulated-trunk.ts';
import type { Trunk } from './trunk.ts';
import { logIgnoredTo } from '../shared/errors.ts';

/** A minimal audio offer (PCMU) until a media server supplies real SDP. */
const PLACEHOLDER_SDP = ['v=0', 'o=- 0 0 IN IP4 127.0.0.1', 's=vd', 'c=IN IP4 127.0.0.1', 't=0 0', 'm=audio 40000 RTP/AVP 0', 'a=rtpmap:0 PCMU/8000', ''].join('\r\n');

let config;
try {
  config = loadAgentConfig();
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(2);
}

const logger = pino({ level: config.LOG_LEVEL, base: { svc: 'media-agent', node: config.VD_AGENT_NODE_ID }, redact: ['token', '*.token', 'secret', '*.secret'] }, pino.destination(2));
// Errors dropped on purpose where no logger is at hand are logged at debug here (`ignored`).
logIgnoredTo(logger);
const log = (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}) => logger[level](fields, msg);

let trunk: Trunk;
if (config.VD_AGENT_TRUNK === 'drachtio') {
  const { DrachtioTrunk } = await import('./drachtio-trunk.ts');
  trunk = new DrachtioTrunk({
    host: config.VD_AGENT_DRACHTIO_HOST,
    port: config.VD_AGENT_DRACHTIO_PORT,
    secret: config.VD_AGENT_DRACHTIO_SECRET!,
    trunkHost: config.VD_AGENT_SIP_TRUNK_HOST!,
    localSdp: PLACEHOLDER_SDP,
    callIdHeader: config.VD_AGENT_SIP_CALL_ID_HEADER ?? null,
    log: (level, msg, fields) => log(level, msg, fields),
  });
} else {
  trunk = new SimulatedTrunk({
    seed: config.VD_AGENT_SEED,
    timeScale: config.VD_AGENT_SIM_TIME_SCALE,
    outcome: config.VD_AGENT_SIM_OUTCOME,
    talkSeconds: config.VD_AGENT_SIM_TALK_SECONDS,
    recordDir: config.VD_AGENT_RECORDINGS_DIR,
  });
  if (config.VD_AGENT_RECORDINGS_DIR) mkdirSync(config.VD_AGENT_RECORDINGS_DIR, { recursive: true });
}

const client = new AgentClient({
  url: config.VD_AGENT_CONTROL_URL,
  token: config.VD_AGENT_TOKEN,
  nodeId: config.VD_AGENT_NODE_ID,
  capacity: config.VD_AGENT_CAPACITY,
  region: config.VD_AGENT_REGION,
  version: AGENT_VERSION,
  trunk,
  log,
  recording: { maxAttempts: config.VD_AGENT_UPLOAD_ATTEMPTS },
});

/** After a second signal: how long the calls' ends are waited for, and the whole stop at most. */
const HANGUP_WAIT_MS = 3_000;
const HURRIED_EXIT_MS = 6_000;

let signals = 0;
const onSignal = (sig: NodeJS.Signals) => {
  signals += 1;
  if (signals > 2) {
    log('warn', 'third signal: exit now', { signal: sig, live_calls: client.liveCalls });
    process.exit(1);
  }
  if (signals === 2) {
    log('warn', 'second signal: hanging up every call, then exiting', { signal: sig, live_calls: client.liveCalls });
    setTimeout(() => {
      log('error', 'calls not ended in time: exiting', { live_calls: client.liveCalls });
      process.exit(1);
    }, HURRIED_EXIT_MS);
    client
      .hangUpAll(HANGUP_WAIT_MS)
      .then(async (left) => {
        await trunk.close();
        await client.close();
        if (left > 0) log('error', 'calls still up at exit', { live_calls: left });
        else log('info', 'every call hung up, exiting');
        process.exit(left > 0 ? 1 : 0);
      })
      .catch((err: unknown) => {
        log('error', 'hurried stop failed', { err: (err as Error).message });
        process.exit(1);
      });
    return;
  }
  log('info', 'signal: draining before exit', { signal: sig, live_calls: client.liveCalls });
  client
    .shutdown()
    .then(() => trunk.close())
    .then(() => {
      log('info', 'drained, exiting');
      process.exit(0);
    })
    .catch((err: unknown) => {
      log('error', 'shutdown failed', { err: (err as Error).message });
      process.exit(1);
    });
};
process.on('SIGTERM', onSignal);
process.on('SIGINT', onSignal);

// The drachtio trunk's start waits for its first connection's outcome and does not throw when
// there is none: the agent then registers draining (trunk_down) until the trunk is up.
try {
  await trunk.start();
} catch (err) {
  log('error', 'trunk did not start', { err: (err as Error).message });
  process.exit(1);
}
client.start();
// Recordings a previous run left unsent (it stopped or died first) are sent now.
if (config.VD_AGENT_RECORDINGS_DIR) void client.resumeUploads(config.VD_AGENT_RECORDINGS_DIR);
log('info', 'media agent started', { trunk: config.VD_AGENT_TRUNK, capacity: config.VD_AGENT_CAPACITY });
