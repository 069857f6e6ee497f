/**
 * The media agent's settings, from the environment, validated with zod. A bad value stops the
 * start with a message naming the variable. The table is in docs/agent-protocol.md.
 */
import { hostname } from 'node:os';
import { z } from 'zod';
import { parseEnv } from '../shared/env.ts';

const schema = z
  .object({
    VD_AGENT_CONTROL_URL: z.string().regex(/^wss?:\/\/.+\/agent\/v1$/, 'must be a ws:// or wss:// URL ending in /agent/v1'),
    VD_AGENT_TOKEN: z.string().min(1, 'is required'),
    VD_AGENT_NODE_ID: z.string().min(1).max(128).default(`node_${hostname()}`),
    VD_AGENT_CAPACITY: z.coerce.number().int().min(0).max(10_000).default(10),
    VD_AGENT_REGION: z.string().min(1).max(64).default('local'),
    VD_AGENT_TRUNK: z.enum(['simulated', 'drachtio']).default('simulated'),
    VD_AGENT_SEED: z.coerce.number().int().default(1),
    /** Simulated trunk: real time = simulated time × this (0.01 makes a 60 s call last 0.6 s). */
    VD_AGENT_SIM_TIME_SCALE: z.coerce.number().positive().max(100).default(1),
    /** Simulated trunk: force every call's outcome (tests and demos). */
    VD_AGENT_SIM_OUTCOME: z.enum(['random', 'answer', 'busy', 'no_answer', 'failed', 'abandoned']).default('random'),
    /** Simulated trunk: force the talk time of answered calls (simulated seconds). */
    VD_AGENT_SIM_TALK_SECONDS: z.coerce.number().positive().optional(),
    /**
     * Simulated trunk: record answered calls (a WAV as long as the talk time) into this folder and
     * upload them to the control plane. Unset (the default, and the dialer bench): no recordings.
     */
    VD_AGENT_RECORDINGS_DIR: z.string().min(1).optional(),
    /** Upload attempts per recording before it is reported failed. */
    VD_AGENT_UPLOAD_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(5),
    VD_AGENT_DRACHTIO_HOST: z.string().min(1).default('127.0.0.1'),
    VD_AGENT_DRACHTIO_PORT: z.coerce.number().int().min(1).max(65535).default(9022),
    VD_AGENT_DRACHTIO_SECRET: z.string().min(1).optional(),
    /** drachtio trunk: host[:port] of the SIP trunk calls are sent to. */
    VD_AGENT_SIP_TRUNK_HOST: z.string().min(1).optional(),
    /**
     * drachtio trunk: a SIP header that carries the platform's call id to the carrier (e.g.
     * X-VD-Call-Id). Unset (the default): no such header; the carrier gets only the number.
     */
    VD_AGENT_SIP_CALL_ID_HEADER: z.string().regex(/^X-[A-Za-z0-9-]{1,60}$/, 'must be an X- header name (letters, digits, dashes)').optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  })
  .superRefine((c, ctx) => {
    if (c.VD_AGENT_TRUNK !== 'drachtio') return;
    if (!c.VD_AGENT_DRACHTIO_SECRET) ctx.addIssue({ code: 'custom', path: ['VD_AGENT_DRACHTIO_SECRET'], message: 'is required with VD_AGENT_TRUNK=drachtio' });
    if (!c.VD_AGENT_SIP_TRUNK_HOST) ctx.addIssue({ code: 'custom', path: ['VD_AGENT_SIP_TRUNK_HOST'], message: 'is required with VD_AGENT_TRUNK=drachtio' });
  });

export type AgentConfig = z.infer<typeof schema>;

export function loadAgentConfig(env: Record<string, string | undefined> = process.env): AgentConfig {
  const parsed = parseEnv(schema, env);
  if (!parsed.ok) throw new Error(`invalid media agent settings: ${parsed.problems.join('; ')}`);
  return parsed.value;
}
