/**
 * `GET /api/platform/ops/services`: every service asked now, all at once, each within 1.5 s, so a
 * service that hangs costs at most 1.5 s of the answer and shows `fail` with null figures (never
 * zeros). What each item's figures are:
 *
 * - control plane (one per live instance): asked over HTTP (`/internal/v1/ops/self`); answer_ms
 *   is that request's round trip; version, uptime and 5xx answers in the last 5 minutes are its own.
 * - media agent (one per node of the registry): pinged over its WebSocket by the instance holding
 *   it; answer_ms is the ping's round trip; uptime since its process started (its hello says).
 * - store: `select` of its version and start time; coordinator: Redis `INFO server`; recording
 *   store: its own check (a write and read back); answer_ms is each one's time.
 * - AI upstream (one per configured purpose): a probe of `{base_url}/models` with its key.
 *
 * Status: `pass` answered well; `warn` answered but not well (5xx answers in the window, a node
 * draining, an upstream answering an error status, no upstream configured); `fail` no answer in
 * time. Nothing here touches `/health` or `/ready`.
 *
 * Not infrastructure: it asks the AI upstreams through the ai room's probe, so it is a room of
 * its own beside the instance registry it reads (`control-plane/infra/instances/`).
 */
import { sql } from 'kysely';
import type { Coordinator } from '../infra/coordination/coordinator.ts';
import { MemoryCoordinator } from '../infra/coordination/memory.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import type { OutboundClient } from '../infra/outbound-http/guarded-client.ts';
import { PROBE_LIMIT_MS } from '../ai/probe.ts';
import { probeEach } from '../ai/health.ts';
import { AI_PURPOSES, aiProviders, type AiProvider, type AiPurpose } from '../ai/providers.ts';
import { SELF_PATH, type Instances, type InstanceRow, type SelfReport } from '../infra/instances/instances.ts';
import { ignore } from '../../shared/errors.ts';

export type ServiceStatus = 'pass' | 'warn' | 'fail';
export type ServiceKind = 'control_plane' | 'media_agent' | 'store' | 'coordinator' | 'recording_store' | 'ai_upstream';

export type ServiceItem = {
  name: string;
  kind: ServiceKind;
  instance: string | null;
  status: ServiceStatus;
  version: string | null;
  answer_ms: number | null;
  uptime_s: number | null;
  server_errors_5m: number | null;
  observed_at: string;
};

/** The recording store as far as this page needs it (its port's `check`). */
export type RecordingCheck = { readonly kind: string; check(signal?: AbortSignal): Promise<{ status: 'pass' | 'fail'; answer_ms: number }> };

export type OpsDeps = {
  store: Store;
  coordinator: Coordinator;
  instances: Instances;
  /** The guarded client the AI probes go through. */
  aiClient: OutboundClient;
  /** The recording store, when this instance has one. */
  recordings: RecordingCheck | null;
};

class TimedOut extends Error {}

/** Every service's item; resolves within about `limitMs` whatever hangs. */
export async function opsServices(deps: OpsDeps, limitMs = PROBE_LIMIT_MS): Promise<{ items: ServiceItem[] }> {
  const deadline = performance.now() + limitMs;
  const within = <T>(work: Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimedOut()), Math.max(0, deadline - performance.now()));
    });
    work.catch(ignore('awaited in the race below; a late failure after the deadline is not the answer'));
    return Promise.race([work, late]).finally(() => clearTimeout(timer));
  };
  const [instances, store, coordinator, recordings, ai] = await Promise.all([
    controlPlanes(deps.instances, within),
    storeItem(deps.store, within, deadline),
    coordinatorItem(deps.coordinator, within),
    deps.recordings ? recordingItem(deps.recordings, within) : Promise.resolve([]),
    aiItems(deps, within, deadline),
  ]);
  return { items: [...instances.items, ...agentItems(deps.instances, instances.reports), store, coordinator, ...recordings, ...ai] };
}

type Within = <T>(work: Promise<T>) => Promise<T>;

const failed = (name: string, kind: ServiceKind, instance: string | null): ServiceItem => ({
  name,
  kind,
  instance,
  status: 'fail',
  version: null,
  answer_ms: null,
  uptime_s: null,
  server_errors_5m: null,
  observed_at: new Date().toISOString(),
});

/** Time of `work` in ms, one decimal. */
async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now();
  const value = await work();
  return { value, ms: Math.round((performance.now() - t) * 10) / 10 };
}

async function controlPlanes(instances: Instances, within: Within): Promise<{ items: ServiceItem[]; reports: Map<string, SelfReport> }> {
  const reports = new Map<string, SelfReport>();
  const items = await Promise.all(
    instances.peers().map(async (peer: InstanceRow): Promise<ServiceItem> => {
      const controller = new AbortController();
      try {
        const { value: report, ms } = await within(timed(() => askInstance(peer.url, instances.token, controller.signal)));
        // Another instance answering at this address (a loopback or unspecified default address on
        // several machines) speaks for itself, not for this one: no answer from this instance.
        if (report.instance !== peer.instance_id) throw new Error(`instance ${report.instance} answered for ${peer.instance_id}`);
        reports.set(peer.instance_id, report);
        return {
          name: 'control-plane',
          kind: 'control_plane',
          instance: peer.instance_id,
          status: report.server_errors_5m > 0 ? 'warn' : 'pass',
          version: report.version,
          answer_ms: ms,
          uptime_s: report.uptime_s,
          server_errors_5m: report.server_errors_5m,
          observed_at: new Date().toISOString(),
        };
      } catch {
        controller.abort();
        return failed('control-plane', 'control_plane', peer.instance_id);
      }
    }),
  );
  return { items, reports };
}

async function askInstance(url: string, token: string | null, signal: AbortSignal): Promise<SelfReport> {
  const res = await fetch(url + SELF_PATH, { headers: { authorization: `Bearer ${token ?? ''}` }, signal });
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new Error(`instance answered ${res.status}`);
  }
  return (await res.json()) as SelfReport;
}

/** One item per media node: the registry's nodes and any node an instance reported holding. */
function agentItems(instances: Instances, reports: Map<string, SelfReport>): ServiceItem[] {
  const held = new Map<string, SelfReport['agents'][number]>();
  for (const r of reports.values()) for (const a of r.agents) held.set(a.node_id, a);
  const ids = new Set([...instances.nodes().map((n) => n.node_id), ...held.keys()]);
  const now = Date.now();
  return [...ids].sort().map((nodeId): ServiceItem => {
    const a = held.get(nodeId);
    if (!a || a.answer_ms === null) return failed('media-agent', 'media_agent', nodeId);
    const since = Date.parse(a.started_at ?? a.connected_at);
    return {
      name: 'media-agent',
      kind: 'media_agent',
      instance: nodeId,
      status: a.draining ? 'warn' : 'pass',
      version: a.version,
      answer_ms: a.answer_ms,
      uptime_s: Math.max(0, Math.floor((now - since) / 1000)),
      server_errors_5m: null,
      observed_at: new Date().toISOString(),
    };
  });
}

/**
 * Runs `work` in a transaction whose statements the store itself stops at `deadline`
 * (`statement_timeout`, local to it): a store that hangs keeps no query running past the answer.
 */
export function bounded<T>(store: Store, deadline: number, work: (tx: Tx) => Promise<T>): Promise<T> {
  return store.transaction(async (tx) => {
    const left = Math.max(1, Math.floor(deadline - performance.now()));
    await sql`select set_config('statement_timeout', ${String(left)}, true)`.execute(tx);
    return work(tx);
  });
}

async function storeItem(store: Store, within: Within, deadline: number): Promise<ServiceItem> {
  try {
    const { value, ms } = await within(
      timed(() =>
        bounded(store, deadline, (tx) =>
          sql<{ version: string; uptime_s: number | null }>`
            select current_setting('server_version') as version,
              floor(extract(epoch from now() - pg_postmaster_start_time()))::float8 as uptime_s`.execute(tx),
        ),
      ),
    );
    const row = value.rows[0];
    return { name: 'store', kind: 'store', instance: store.kind, status: 'pass', version: row.version, answer_ms: ms, uptime_s: row.uptime_s === null ? null : Math.max(0, Number(row.uptime_s)), server_errors_5m: null, observed_at: new Date().toISOString() };
  } catch {
    return failed('store', 'store', store.kind);
  }
}

async function coordinatorItem(coordinator: Coordinator, within: Within): Promise<ServiceItem> {
  try {
    const { value, ms } = await within(timed(() => coordinator.about()));
    return { name: 'coordinator', kind: 'coordinator', instance: value.kind, status: 'pass', version: value.version, answer_ms: ms, uptime_s: value.uptime_s, server_errors_5m: null, observed_at: new Date().toISOString() };
  } catch {
    return failed('coordinator', 'coordinator', coordinator instanceof MemoryCoordinator ? 'in-process' : 'redis');
  }
}

async function recordingItem(recordings: RecordingCheck, within: Within): Promise<ServiceItem[]> {
  // Ended at the deadline: a hanging bucket keeps no request (or socket) past the answer.
  const controller = new AbortController();
  try {
    const { value, ms } = await within(timed(() => recordings.check(controller.signal)));
    if (value.status !== 'pass') return [failed('recording-store', 'recording_store', recordings.kind)];
    return [{ name: 'recording-store', kind: 'recording_store', instance: recordings.kind, status: 'pass', version: null, answer_ms: ms, uptime_s: null, server_errors_5m: null, observed_at: new Date().toISOString() }];
  } catch {
    controller.abort();
    return [failed('recording-store', 'recording_store', recordings.kind)];
  }
}

/** One item per configured purpose (each distinct upstream probed once); a warning when none is. */
async function aiItems(deps: OpsDeps, within: Within, deadline: number): Promise<ServiceItem[]> {
  let configured: Array<{ purpose: AiPurpose; provider: AiProvider }>;
  try {
    // One statement: queries left queued on a transaction the store has stopped would run outside it.
    const providers = await within(bounded(deps.store, deadline, (tx) => aiProviders(tx)));
    configured = AI_PURPOSES.flatMap((purpose, i) => (providers[i] ? [{ purpose, provider: providers[i]! }] : []));
  } catch {
    return [failed('ai-upstream', 'ai_upstream', null)];
  }
  if (configured.length === 0) return [{ ...failed('ai-upstream', 'ai_upstream', null), status: 'warn' }];
  // What is left of the 1.5 s after the settings were read.
  const left = Math.max(1, deadline - performance.now());
  const probes = await probeEach(deps.aiClient, configured.map((c) => c.provider), left);
  return configured.map(({ purpose }, i): ServiceItem => {
    const p = probes[i];
    if (p.kind !== 'answered') return failed('ai-upstream', 'ai_upstream', purpose);
    return {
      name: 'ai-upstream',
      kind: 'ai_upstream',
      instance: purpose,
      status: p.status >= 200 && p.status < 300 ? 'pass' : 'warn',
      version: null,
      answer_ms: p.answer_ms,
      uptime_s: null,
      server_errors_5m: null,
      observed_at: new Date().toISOString(),
    };
  });
}
