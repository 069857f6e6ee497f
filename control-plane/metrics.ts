/**
 * Prometheus metrics: every metric of the platform is defined here, and nowhere else.
 *
 * Two kinds, on two registries of prom-client's (never its global default one):
 * - The counters and histograms of work done (HTTP requests, launches, webhook deliveries, usage
 *   items, import rows, recording runs, QA reviews) and Node's default process metrics live in
 *   one registry per process, `processRegistry`: code anywhere increments them in-process (an
 *   increment is a few property reads; nothing is written anywhere until a scrape).
 * - The gauges read at scrape time from one running instance (its live calls, its kill-switch
 *   reader, the outbox lag in its store) live in a registry made per instance by
 *   `instanceRegistry`, so several instances in one process (the tests) each report their own.
 *
 * A scrape (`scrape`) answers both as one Prometheus text document. Names follow Prometheus
 * conventions: the `vd_` prefix, `_total` for counters, base units (`_seconds`), label values from
 * small fixed sets (an HTTP route is its pattern, never the path asked for).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ignore } from '../shared/errors.ts';

/** The registry of this process's counters and histograms (and the default process metrics). */
export const processRegistry = new Registry();

let defaultsOn = false;
/**
 * Adds Node's default process metrics (CPU, memory, event loop lag, GC) to `processRegistry`, once
 * per process. The event loop's delay is sampled every 100 ms (prom-client's default, 10 ms, is a
 * timer waking the process 100 times a second: 4.7 ms of CPU a second here on its own, a third of
 * an idle instance's; at 100 ms, 0.5 ms): a scrape's lag figures are then from ~150 samples (15 s).
 */
export function collectProcessMetrics(): void {
  if (defaultsOn) return;
  defaultsOn = true;
  collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: 100 });
}

// ---- HTTP ---------------------------------------------------------------------------------

/** Route label of a request no route matched (a 404 from the not-found handler). */
export const UNMATCHED_ROUTE = 'unmatched';

export const httpRequests = new Counter({
  name: 'vd_http_requests_total',
  help: 'HTTP requests answered by the API, by method, route pattern (never the raw path; "unmatched" when no route matched) and status code.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [processRegistry],
});

export const httpRequestDuration = new Histogram({
  name: 'vd_http_request_duration_seconds',
  help: 'Time from a request reaching the API to its answer being ready, by method and route pattern.',
  labelNames: ['method', 'route'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [processRegistry],
});

// ---- Dialing ------------------------------------------------------------------------------

export const callLaunches = new Counter({
  name: 'vd_call_launches_total',
  help: 'Calls sent to a media agent (originate sent), by the pacing loop or a manual dial.',
  registers: [processRegistry],
});

/**
 * Why a call about to be placed was not: the kill switch (paused or unreadable), the do-not-call
 * list, a concurrent-call cap, no media node with room, the node refusing it, or the campaign
 * stopping or pausing between its reservation and its launch, the number called as often as
 * 24 hours allow, or the callee's calling hours (a manual dial outside them).
 */
export type DenyReason = 'kill_switch' | 'do_not_call' | 'concurrency_cap' | 'no_capacity' | 'node_refused' | 'stopped' | 'calls_per_number' | 'outside_calling_hours';
export const DENY_REASONS: readonly DenyReason[] = ['kill_switch', 'do_not_call', 'concurrency_cap', 'no_capacity', 'node_refused', 'stopped', 'calls_per_number', 'outside_calling_hours'];

export const callLaunchDenials = new Counter({
  name: 'vd_call_launch_denials_total',
  help: 'Calls about to be placed that were not, by reason (kill_switch, do_not_call, concurrency_cap, no_capacity, node_refused, stopped).',
  labelNames: ['reason'] as const,
  registers: [processRegistry],
});

for (const reason of DENY_REASONS) callLaunchDenials.inc({ reason }, 0);

// ---- Webhooks, usage, imports, recordings, QA -----------------------------------------------

/** A webhook attempt's result as written: delivered (2xx), retrying (failed, tried again later), given_up (failed for the last time). */
export type WebhookOutcome = 'delivered' | 'retrying' | 'given_up';

export const webhookDeliveries = new Counter({
  name: 'vd_webhook_deliveries_total',
  help: 'Webhook delivery attempts whose outcome was written, by outcome (delivered, retrying, given_up).',
  labelNames: ['outcome'] as const,
  registers: [processRegistry],
});

for (const outcome of ['delivered', 'retrying', 'given_up'] as const) webhookDeliveries.inc({ outcome }, 0);

export const usageItems = new Counter({
  name: 'vd_usage_items_total',
  help: 'Usage items newly metered (an item counted again is not counted twice), by kind.',
  labelNames: ['kind'] as const,
  registers: [processRegistry],
});

/** Where imported rows came from: legacy lead and do-not-call files, and the inbound lead API. */
export type ImportSource = 'legacy_leads' | 'legacy_dnc' | 'inbound_leads';

export const importRows = new Counter({
  name: 'vd_import_rows_total',
  help: 'Rows of legacy lead and do-not-call imports and of inbound leads, by source and outcome (accepted, rejected).',
  labelNames: ['source', 'outcome'] as const,
  registers: [processRegistry],
});

/** Increment with the run's final status, e.g. `recordingImportRuns.inc({ status: 'done' })`. */
export const recordingImportRuns = new Counter({
  name: 'vd_recording_import_runs_total',
  help: 'Recording import runs finished, by status.',
  labelNames: ['status'] as const,
  registers: [processRegistry],
});

/** Increment with the review's final status, e.g. `qaReviews.inc({ status: 'done' })`. */
export const qaReviews = new Counter({
  name: 'vd_qa_reviews_total',
  help: 'QA reviews finished, by status.',
  labelNames: ['status'] as const,
  registers: [processRegistry],
});

export const metricsStoreReadFailures = new Counter({
  name: 'vd_metrics_store_read_failures_total',
  help: 'Scrape-time reads of the store (outbox lag) that failed or ran past their time limit; their gauges are left out of that scrape.',
  registers: [processRegistry],
});

// ---- Per-instance gauges, read at scrape time -----------------------------------------------

/** One consumer's queue in the outbox: events waiting, and the age of the oldest (null when none). */
export type ConsumerLag = { consumer: string; pending: number; oldestAgeSeconds: number | null };

/** What a running instance tells its scrape. */
export type InstanceSources = {
  /** Calls this instance's dialer counts as up now. */
  liveCalls: () => number;
  /** The kill switch as this instance's reader last saw it; null before its first good read. */
  killSwitch: () => { platformPaused: boolean; pausedCompanies: number; lastGoodReadUnixSeconds: number } | null;
  /** The outbox's queues per consumer, read from the store. */
  outboxLag: () => Promise<ConsumerLag[]>;
};

export type InstanceRegistryOptions = {
  /** How long a scrape waits for the store; past it the store's gauges are left out (default 1000 ms). */
  storeTimeoutMs?: number;
  /** How long a store read serves scrapes before it is made again (default 5000 ms). */
  storeCacheMs?: number;
  now?: () => number;
};

/**
 * The registry of one instance's gauges, each read at scrape time. The store is read at most once
 * per `storeCacheMs` (scrapes in between get that read's figures; one read under way serves every
 * scrape waiting for it) and waited for at most `storeTimeoutMs`.
 */
export function instanceRegistry(src: InstanceSources, opts: InstanceRegistryOptions = {}): Registry {
  const registry = new Registry();
  const timeoutMs = opts.storeTimeoutMs ?? 1000;
  const cacheMs = opts.storeCacheMs ?? 5000;
  const now = opts.now ?? (() => performance.now());

  new Gauge({
    name: 'vd_live_calls',
    help: 'Calls this instance launched that are up now (dialing, ringing or answered).',
    registers: [registry],
    collect() {
      this.set(src.liveCalls());
    },
  });

  const ks = () => src.killSwitch();
  new Gauge({
    name: 'vd_kill_switch_platform_paused',
    help: 'The platform-wide dialing pause as this instance last read it: 1 paused, 0 not (0 before the first good read too: see the last good read).',
    registers: [registry],
    collect() {
      this.set(ks()?.platformPaused ? 1 : 0);
    },
  });
  new Gauge({
    name: 'vd_kill_switch_paused_companies',
    help: 'Companies whose dialing is paused, as this instance last read the kill switch.',
    registers: [registry],
    collect() {
      this.set(ks()?.pausedCompanies ?? 0);
    },
  });
  new Gauge({
    name: 'vd_kill_switch_last_good_read_timestamp_seconds',
    help: 'When this instance last read the kill switch successfully (unix seconds; 0 never). Launching stops when it is more than 2 s old.',
    registers: [registry],
    collect() {
      this.set(ks()?.lastGoodReadUnixSeconds ?? 0);
    },
  });

  let cached: { at: number; lag: ConsumerLag[] } | null = null;
  let reading: Promise<ConsumerLag[] | null> | null = null;
  const readLag = (): Promise<ConsumerLag[] | null> => {
    if (cached && now() - cached.at < cacheMs) return Promise.resolve(cached.lag);
    if (reading) return reading;
    const startedAt = now();
    let timer: NodeJS.Timeout | undefined;
    const read = src.outboxLag().then((lag) => {
      cached = { at: startedAt, lag };
      return lag;
    });
    reading = Promise.race([read, new Promise<null>((r) => (timer = setTimeout(() => r(null), timeoutMs)))])
      // A failed read is no reading, as a late one is: counted just below, the lag left unknown.
      .catch(() => null)
      .then((lag) => {
        if (!lag) metricsStoreReadFailures.inc();
        return lag;
      })
      .finally(() => {
        clearTimeout(timer);
        reading = null;
      });
    // A read past its limit still fills the cache when it comes back.
    read.catch(ignore('a read past its limit still fills the cache when it comes back; its failure leaves the cache as it was'));
    return reading;
  };

  // Each gauge waits for the same read (a scrape collects every metric at once).
  new Gauge({
    name: 'vd_outbox_pending_events',
    help: 'Events in the outbox waiting for a consumer (audit, webhooks, meter), by consumer; read from the store at scrape time.',
    labelNames: ['consumer'] as const,
    registers: [registry],
    async collect() {
      const lag = await readLag();
      this.reset();
      for (const c of lag ?? []) this.set({ consumer: c.consumer }, c.pending);
    },
  });
  new Gauge({
    name: 'vd_outbox_oldest_pending_age_seconds',
    help: 'Age of the oldest event waiting for each outbox consumer (absent when none waits); read from the store at scrape time.',
    labelNames: ['consumer'] as const,
    registers: [registry],
    async collect() {
      const lag = await readLag();
      this.reset();
      for (const c of lag ?? []) if (c.oldestAgeSeconds !== null) this.set({ consumer: c.consumer }, c.oldestAgeSeconds);
    },
  });
  return registry;
}

/** The Prometheus text document of the process's metrics and `instance`'s. */
export async function scrape(instance: Registry | null): Promise<string> {
  // The instance's first: a store read that fails in it is counted in this same scrape.
  const theirs = instance ? await instance.metrics() : '';
  const own = await processRegistry.metrics();
  return theirs ? `${own}\n${theirs}` : own;
}

/** The content type of `scrape`'s answer. */
export const METRICS_CONTENT_TYPE = processRegistry.contentType;
