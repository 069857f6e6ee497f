/**
 * The typed bag of services, built once at start (`createServices`) and read in handlers with
 * `c.get('services')`. Tests build it with overrides; there is no DI framework.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Config } from './config.ts';
import { createLogger, type Logger } from '../shared/logger.ts';
import { ignore, logIgnoredTo } from '../shared/errors.ts';
import { ApiKeys } from './auth/api-keys.ts';
import { storeColumnSources, type ColumnSources } from './companies/list-columns.ts';
import type { Coordinator } from './infra/coordination/coordinator.ts';
import { MemoryCoordinator } from './infra/coordination/memory.ts';
import { RedisCoordinator } from './infra/coordination/redis.ts';
import { openStore, type Store, type Tx } from './infra/db/store.ts';
import { companyActor } from './companies/company-actor.ts';
import { campaignActor } from './core/campaign-actor.ts';
import { suspendSteps, type SuspendStep } from './companies/suspend-chain.ts';
import { auditConsumer } from './infra/runtime/audit.ts';
import type { ActorDefinition } from './infra/runtime/definition.ts';
import { mirrorSwitch } from './platform-controls/kill-switch.ts';
import { OUTBOX_CONSUMERS, OutboxWorker, type Consumer } from './infra/runtime/outbox.ts';
import { ActorRuntime, type RuntimeOptions } from './infra/runtime/runtime.ts';
import { AgentHub } from './telephony/agent-hub.ts';
import { MediaNodes } from './telephony/nodes.ts';
import { systemClock, type Clock } from '../shared/clock.ts';
import { OutboundClient, type LookupFn } from './infra/outbound-http/guarded-client.ts';
import { WebhookWorker, type WebhookWorkerOptions } from './webhooks/webhook-worker.ts';
import { ListChecks, type ListChecksOptions } from './core/checks.ts';
import { METER_CONSUMER, UsageMeter } from './usage/ledger.ts';
import { AiSampleBuffer, pruneAiSamples } from './ai/samples.ts';
import { PROBE_LIMIT_MS } from './ai/probe.ts';
import { Instances } from './infra/instances/instances.ts';
import { RecordingImports, type RecordingImportsOptions } from './imports/recordings/worker.ts';
import { listenToRecordingReports } from './recordings/agent-reports.ts';
import { recordingStoreFromConfig } from './recordings/from-config.ts';
import type { RecordingStoredHook } from './recordings/save.ts';
import type { RecordingStore } from './recordings/store.ts';
import { queueReview } from './qa/reviews.ts';
import { QaWorker, type QaWorkerOptions } from './qa/worker.ts';
import type { AiTimeouts } from './qa/ai-scorer.ts';

export type Services = {
  config: Config;
  logger: Logger;
  store: Store;
  coordinator: Coordinator;
  apiKeys: ApiKeys;
  /** Where the company list columns come from (tests put slow or failing sources in). */
  columnSources: ColumnSources;
  /** The durable actors: companies, campaigns and media nodes. */
  runtime: ActorRuntime;
  outbox: OutboxWorker;
  /** The media agents' WebSocket endpoint (`/agent/v1`) and their registry on this instance. */
  agentHub: AgentHub;
  /** Media nodes: their actors, registry, choice for a new call, and commands wherever their socket is. */
  nodes: MediaNodes;
  /** The suspend chain's steps, in order; tests wrap a step to make it fail. */
  suspendSteps: SuspendStep[];
  /**
   * Set-up steps of a new company, run in its creation transaction after its rows: the company
   * actor's first snapshot, core's own set-up. Any failure undoes the whole creation.
   */
  companySetup: Array<(tx: Tx, tenantId: string) => Promise<void>>;
  /** This instance's name in leases and logs. */
  instanceId: string;
  /** Wall-clock time for schedules (webhook retries, secret grace); tests move it by hand. */
  clock: Clock;
  /** The one guarded client for customer addresses (webhooks and recording imports). */
  outbound: OutboundClient;
  /** DNS used when a customer address is saved (the client checks again at connect time). */
  lookup: LookupFn | undefined;
  /** Webhook deliveries: the `webhooks` outbox consumer, sender and poller of this instance. */
  webhooks: WebhookWorker;
  /** The list checks this instance runs (people are called only once checked). */
  checks: ListChecks;
  /** The usage meter's consumer: monthly totals from the queued usage events. */
  meter: UsageMeter;
  /** The recording store: a folder under VD_DATA_DIR, or an S3-compatible bucket. */
  recordings: RecordingStore;
  /**
   * Run in the transaction that marks a recording stored (`saveRecording`), after its event: the
   * QA Bot queues its review here. A failure undoes the save (the sender tries again).
   */
  recordingStored: RecordingStoredHook[];
  /** This instance among the others (its row, address and 5xx count), for `/ops/services`. */
  instances: Instances;
  /** The agents' bot-session reports, written to the store as AI samples in batches. */
  aiSamples: AiSampleBuffer;
  /** The guarded client of the AI upstream probes: an operator's address, a 1.5 s limit. */
  aiProbeClient: OutboundClient;
  /** Recording import runs: queued, scheduled and taken over by whichever instance leases them. */
  recordingImports: RecordingImports;
  /** The QA Bot's worker on this instance: it scores the queued reviews. */
  qa: QaWorker;
  close(): Promise<void>;
};

export type ServiceOverrides = Partial<Pick<Services, 'logger' | 'store' | 'coordinator' | 'columnSources' | 'recordings'>> & {
  runtime?: RuntimeOptions;
  /** Webhook timings, clock and spread, and the DNS the guarded client uses (tests simulate rebinding). */
  webhooks?: WebhookWorkerOptions & { lookup?: LookupFn };
  /** List check timings and chunk size. */
  checks?: ListChecksOptions;
  /** Recording import timings (poll, lease, the length of a scheduling minute) and files at once. */
  recordingImports?: RecordingImportsOptions;
  /** QA worker timings and the AI upstream's time limits. */
  qa?: QaWorkerOptions & { timeouts?: AiTimeouts };
};

/** Builds the services from the settings: PGlite or Postgres, in-process or Redis coordination. */
export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const logger = overrides.logger ?? createLogger(config.LOG_LEVEL);
  const instanceId = config.VD_INSTANCE_ID ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const store = overrides.store ?? (await openStore(config.DATABASE_URL, config.VD_DATA_DIR));
  const coordinator = overrides.coordinator ?? (config.REDIS_URL ? new RedisCoordinator(config.REDIS_URL, { keyPrefix: config.VD_REDIS_KEY_PREFIX }) : new MemoryCoordinator());
  const apiKeys = new ApiKeys(store, coordinator);
  const log = logger.child({ instance: instanceId });
  // Errors dropped on purpose where no logger is at hand are logged at debug here (`ignored`).
  logIgnoredTo(log);
  const agentHub = new AgentHub({ token: config.VD_AGENT_TOKEN, logger: log });
  const nodes = new MediaNodes({ store, coordinator, hub: agentHub, log, instanceId, runtime: () => runtime });
  const actorDefs: ActorDefinition[] = [companyActor(() => services.suspendSteps), campaignActor(), nodes.actorDefinition()];
  const runtime = new ActorRuntime({ store, coordinator, log, instanceId }, actorDefs, overrides.runtime);
  const clock = overrides.webhooks?.clock ?? systemClock;
  const lookup = overrides.webhooks?.lookup;
  const maxInFlight = overrides.webhooks?.maxInFlight ?? 512;
  // As many sockets per origin as sends may be under way: no attempt waits for a socket on its 10 s.
  const outbound = new OutboundClient({ allowPrivate: config.VD_ALLOW_PRIVATE_TARGETS, lookup, timeoutMs: overrides.webhooks?.answerLimitMs, connectionsPerOrigin: maxInFlight });
  const webhooks = new WebhookWorker({ store, client: outbound, log, instanceId }, { ...overrides.webhooks, maxInFlight, clock });
  const checks = new ListChecks({ store, log, instanceId, coordinator }, overrides.checks);
  const consumers = new Map<string, Consumer>([
    ['audit', auditConsumer],
    ['webhooks', webhooks.consumer()],
  ]);
  // The meter drains its own queue (its own batch size; it can be paused), woken by the outbox
  // worker's look-up when events are queued for it.
  const meter = new UsageMeter({ store, log });
  for (const name of OUTBOX_CONSUMERS) if (!consumers.has(name) && name !== METER_CONSUMER) throw new Error(`outbox consumer ${name} has no handler`);
  const outbox = new OutboxWorker(store, coordinator, log, consumers, { elsewhere: new Map([[METER_CONSUMER, () => meter.wake()]]) });
  const recordingStore = overrides.recordings ? { store: overrides.recordings, close: async () => {} } : recordingStoreFromConfig(config);
  listenToRecordingReports(agentHub, store, log);
  const recordingImports = new RecordingImports(
    { store, log, instanceId, client: outbound, recordings: () => ({ store, recordings: services.recordings, recordingStored: services.recordingStored }) },
    overrides.recordingImports,
  );
  // The AI upstream is an address a platform_owner gave, like the platform's own bucket: private
  // addresses are allowed for it (a model server in the same network), still no redirects.
  const aiClient = new OutboundClient({ allowPrivate: true, lookup, connectionsPerOrigin: 16 });
  const qa = new QaWorker({ store, log, instanceId, coordinator, client: aiClient, recordings: recordingStore.store, timeouts: overrides.qa?.timeouts }, overrides.qa);
  const instances = new Instances({ store, log, instanceId, housekeeping: () => pruneAiSamples(store) });
  const aiSamples = new AiSampleBuffer({ store, log, instanceId });
  const aiProbeClient = new OutboundClient({ allowPrivate: true, lookup, timeoutMs: PROBE_LIMIT_MS, connectionsPerOrigin: 4 });
  const closeOwned = async () => {
    if (!overrides.coordinator) await coordinator.close().catch(ignore('closing: the coordinator may be gone already'));
    if (!overrides.store) await store.close().catch(ignore('closing: the store may be gone already'));
  };
  const services: Services = {
    config,
    logger: log,
    store,
    coordinator,
    apiKeys,
    columnSources: overrides.columnSources ?? storeColumnSources(store),
    runtime,
    outbox,
    agentHub,
    nodes,
    suspendSteps: suspendSteps({ store, apiKeys, coordinator, runtime }),
    companySetup: [(tx, tenantId) => runtime.create(tx, 'company', tenantId, { tenantId })],
    instanceId,
    clock,
    outbound,
    lookup,
    webhooks,
    checks,
    meter,
    recordings: recordingStore.store,
    instances,
    aiSamples,
    aiProbeClient,
    recordingImports,
    // Every stored recording, from a call or an import, is queued for the QA Bot exactly once.
    recordingStored: [(tx, r) => queueReview(tx, { tenantId: r.tenant_id, recordingId: r.id, callId: r.call_id, campaignId: r.campaign_id }).then(() => {})],
    qa,
    close: () => stopServices(services, { aiClient, recordingStore, closeOwned }),
  };
  await startServices(services);
  return services;
}

/** Starts the parts in order; a half-started instance is closed again (no connection kept open, no process kept alive) and the error thrown. */
async function startServices(s: Services): Promise<void> {
  try {
    await s.apiKeys.start();
    await s.runtime.start();
    await s.outbox.start();
    s.webhooks.start();
    s.checks.start();
    s.recordingImports.start();
    s.qa.start();
    s.meter.start();
    s.aiSamples.start(s.agentHub);
    await s.nodes.start();
    // Heals a mirror write lost after a commit (the coordinator was away): the kill switch's truth is the store.
    void mirrorSwitch({ store: s.store, coordinator: s.coordinator, logger: s.logger });
  } catch (err) {
    await s.close().catch(ignore('a half-started instance closes what it opened; its start failure is what is thrown'));
    throw err;
  }
}

/**
 * Stops the parts in order: the workers before the clients and the store they use, the store and
 * coordinator last (and only those this instance opened). `own` are the parts not in the bag.
 */
async function stopServices(s: Services, own: { aiClient: OutboundClient; recordingStore: { close: () => Promise<void> }; closeOwned: () => Promise<void> }): Promise<void> {
  await s.instances.stop();
  await s.agentHub.close();
  await s.aiSamples.stop();
  await s.aiProbeClient.close();
  await s.checks.stop();
  await s.recordingImports.stop();
  await s.qa.stop();
  await own.aiClient.close();
  await s.meter.stop();
  await s.nodes.stop();
  await s.outbox.stop();
  await s.webhooks.stop();
  await s.outbound.close();
  await own.recordingStore.close();
  await s.runtime.stop();
  await s.apiKeys.stop();
  await own.closeOwned();
}
