/**
 * A real media agent process (`media-agent/main.ts`) on the simulated trunk for suites that need
 * one they can signal: time ×0.01, every call answered, a fixed talk time. `env` adds to or
 * overrides the settings (capacity, talk time, log level, …); only PATH is inherited.
 */
import { spawn, type ChildProcess } from 'node:child_process';

const ROOT = new URL('../..', import.meta.url).pathname;

export type AgentProcess = { proc: ChildProcess; exit: Promise<number | null>; output: () => string };

export function spawnAgentProcess(url: string, token: string, nodeId: string, env: Record<string, string> = {}): AgentProcess {
  const proc = spawn(process.execPath, ['media-agent/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      VD_AGENT_CONTROL_URL: url,
      VD_AGENT_TOKEN: token,
      VD_AGENT_NODE_ID: nodeId,
      VD_AGENT_CAPACITY: '2',
      VD_AGENT_REGION: 'test-1',
      VD_AGENT_SEED: '7',
      VD_AGENT_SIM_TIME_SCALE: '0.01',
      VD_AGENT_SIM_OUTCOME: 'answer',
      VD_AGENT_SIM_TALK_SECONDS: '30',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return { proc, exit, output: () => out };
}
