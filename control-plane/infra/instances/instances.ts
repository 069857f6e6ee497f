/**
 * How control-plane instances find each other for `/ops/services`. Each instance, once its HTTP
 * server listens, keeps a row in `cp_instances` (its address, version and start time) and renews
 * it every 2 s; a row not renewed for 15 s is a dead instance's. The same beat reads the live
 * instances' rows and the media node registry into memory, so asking for the services reads
 * nothing from the store before it asks: a hung store costs the store's own item, not the list.
 *
 * An instance is asked directly, over HTTP (`GET /internal/v1/ops/self`, `http/routes/peer.ts`),
 * with a bearer token every instance reads from the store at start (made once, by the first
 * instance, in `platform_settings`); the answer's round trip is that instance's answer time. It
 * answers its own figures (uptime, server errors in the last 5 minutes) and a WebSocket ping of
 * each media agent whose socket it holds.
 */
import { randomBytes, createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import type { Logger } from '../../../shared/logger.ts';
import type { Store } from '../db/store.ts';
import { ServerErrorWindow } from './server-errors.ts';
import { ignore } from '../../../shared/errors.ts';

/** The control plane's version (package.json), reported on `/ops/services`. */
export const CONTROL_PLANE_VERSION: string = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** How often an instance renews its row and reads the others'. */
export const BEAT_MS = 2_000;
/** A row not renewed for this long is a dead instance's. */
export const INSTANCE_GONE_AFTER_MS = 15_000;
/** The path an instance answers its own figures on. */
export const SELF_PATH = '/internal/v1/ops/self';
/** Longest an instance waits for its agents' pongs before it answers (inside the asker's 1.5 s). */
export const AGENT_PING_LIMIT_MS = 1_000;

const TOKEN_KEY = 'ops_peer_token';
/** Longest `stop()` waits for the store to take this instance's row away. */
const STOP_WAIT_MS = 2_000;
/**
 * Old rows and AI samples are removed every this many beats (a minute) while there are none to
 * remove, and at each beat while there are: a sample is removed at most a minute after its 15
 * minutes (they are read by time, so a late one is never counted).
 */
const HOUSEKEEPING_EVERY = 30;

/**
 * The agents this instance holds, as its self report asks them (the telephony room's agent hub,
 * given by the caller: infrastructure imports no domain room).
 */
export type HeldAgents = {
  nodes(): Array<{ node_id: string; online: boolean; version: string; started_at?: Date | null; connected_at: Date; draining: boolean }>;
  ping(nodeId: string, timeoutMs: number): Promise<number | null>;
};

/** Removes a batch of old rows of a domain room at a housekeeping beat; how many it removed. */
export type Housekeeping = () => Promise<number>;

export type InstanceRow = { instance_id: string; url: string; version: string; started_at: Date };
export type NodeRegistryRow = { node_id: string; state: string; version: string | null; instance: string | null; last_heartbeat_at: Date | null; connected_at: Date | null };

/** What an instance answers about itself. */
export type SelfReport = {
  instance: string;
  version: string;
  started_at: string;
  uptime_s: number;
  server_errors_5m: number;
  /** The agents whose sockets it holds: their round trip (null: no pong in time), version and start. */
  agents: Array<{ node_id: string; answer_ms: number | null; version: string; started_at: string | null; connected_at: string; draining: boolean }>;
};

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export class Instances {
  readonly instanceId: string;
  readonly version = CONTROL_PLANE_VERSION;
  readonly startedAt = new Date();
  /** 5xx answers of this instance (the request log counts them). */
  readonly serverErrors = new ServerErrorWindow();
  readonly #store: Store;
  readonly #log: Logger;
  readonly #housekeeping: Housekeeping;
  #url: string | null = null;
  #token: string | null = null;
  #tokenDigest: Buffer | null = null;
  #timer: NodeJS.Timeout | null = null;
  #beating: Promise<void> | null = null;
  #peers: InstanceRow[] = [];
  #nodes: NodeRegistryRow[] = [];
  #beats = 0;
  #pruning = true;
  #stopped = false;

  /** `housekeeping`: what else goes at a housekeeping beat (context.ts: the AI samples past their 15 minutes). */
  constructor(deps: { store: Store; log: Logger; instanceId: string; housekeeping?: Housekeeping }) {
    this.#store = deps.store;
    this.#log = deps.log;
    this.#housekeeping = deps.housekeeping ?? (async () => 0);
    this.instanceId = deps.instanceId;
  }

  /** Starts keeping this instance's row, reachable at `url`. */
  async register(url: string): Promise<void> {
    this.#url = url.replace(/\/+$/, '');
    this.#token = await peerToken(this.#store);
    this.#tokenDigest = digest(this.#token);
    await this.#beat();
    const others = this.#peers.filter((p) => p.instance_id !== this.instanceId);
    if (others.length > 0 && localOnly(this.#url)) {
      // Refusing to start would break several instances on one machine (where loopback is right);
      // on several machines this address reaches whichever instance is local to the asker.
      this.#log.warn(
        { url: this.#url, other_instances: others.length },
        'this instance registered a loopback or unspecified address while other instances are registered: set VD_INSTANCE_URL to an address the others can reach, or /ops/services shows it failed on theirs',
      );
    }
    this.#timer = setInterval(() => {
      if (!this.#beating) this.#beating = this.#beat().finally(() => (this.#beating = null));
    }, BEAT_MS);
    this.#timer.unref();
  }

  /** This instance's address, once registered. */
  get url(): string | null {
    return this.#url;
  }

  /** The bearer token instances send each other (null before `register`). */
  get token(): string | null {
    return this.#token;
  }

  /** Whether an Authorization header carries the instances' token. */
  authorized(header: string | undefined): boolean {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!m || !this.#tokenDigest) return false;
    return timingSafeEqual(digest(m[1]), this.#tokenDigest);
  }

  /**
   * The live instances as of the last beat, this one always among them (even when the store did
   * not answer the beat).
   */
  peers(): InstanceRow[] {
    const self: InstanceRow[] = this.#url ? [{ instance_id: this.instanceId, url: this.#url, version: this.version, started_at: this.startedAt }] : [];
    return [...self, ...this.#peers.filter((p) => p.instance_id !== this.instanceId)];
  }

  /** The media node registry as of the last beat. */
  nodes(): NodeRegistryRow[] {
    return this.#nodes;
  }

  /** Reads the live instances and the node registry now (the beat does it every 2 s). */
  async refresh(): Promise<void> {
    await this.#read(false);
  }

  /**
   * The live instances and the node registry in one statement (one round trip, as the idle
   * instance's beat), renewing this instance's row first with `renew`. The row renewed is not
   * among the instances read (one snapshot): `peers()` adds this instance itself.
   */
  async #read(renew: boolean): Promise<void> {
    type Json<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };
    const r = await sql<{ peers: Json<InstanceRow>[]; nodes: Json<NodeRegistryRow>[] }>`
      ${renew ? sql`with renewed as (
        insert into cp_instances (instance_id, url, version, started_at) values (${this.instanceId}, ${this.#url}, ${this.version}, ${this.startedAt})
        on conflict (instance_id) do update set url = excluded.url, version = excluded.version, seen_at = now()
      )` : sql``}
      select
        (select coalesce(json_agg(json_build_object('instance_id', i.instance_id, 'url', i.url, 'version', i.version, 'started_at', i.started_at)
          order by i.started_at, i.instance_id), '[]')
        from cp_instances i where i.seen_at > now() - make_interval(secs => ${INSTANCE_GONE_AFTER_MS / 1000})) as peers,
        -- Every node but those offline for over an hour (a node replaced long ago is not a service).
        (select coalesce(json_agg(json_build_object('node_id', n.node_id, 'state', n.state, 'version', n.version, 'instance', n.instance,
            'last_heartbeat_at', n.last_heartbeat_at, 'connected_at', n.connected_at) order by n.node_id), '[]')
        from media_nodes n where n.state <> 'offline' or n.last_heartbeat_at > now() - interval '1 hour') as nodes`.execute(this.#store.db);
    const { peers, nodes } = r.rows[0];
    const date = (t: string | null) => (t === null ? null : new Date(t));
    this.#peers = peers.map((p) => ({ ...p, started_at: new Date(p.started_at) }));
    this.#nodes = nodes.map((n) => ({ ...n, last_heartbeat_at: date(n.last_heartbeat_at), connected_at: date(n.connected_at) }));
  }

  async #beat(): Promise<void> {
    if (this.#stopped || !this.#url) return;
    try {
      await this.#read(true);
      // Old rows and samples go (samples are read over 15 minutes): by time, in batches, at most a
      // second of a beat; every beat while there are some, else once a minute.
      if (this.#pruning || ++this.#beats % HOUSEKEEPING_EVERY === 0) {
        await sql`delete from cp_instances where seen_at < now() - interval '1 day'`.execute(this.#store.db);
        this.#pruning = (await this.#housekeeping()) > 0;
      }
    } catch (err) {
      this.#log.warn({ err }, 'instance beat failed');
    }
  }

  /** What this instance answers about itself: its figures, and a ping of each agent it holds. */
  async selfReport(hub: HeldAgents): Promise<SelfReport> {
    const held = hub.nodes().filter((n) => n.online);
    const pings = await Promise.all(held.map((n) => hub.ping(n.node_id, AGENT_PING_LIMIT_MS)));
    return {
      instance: this.instanceId,
      version: this.version,
      started_at: this.startedAt.toISOString(),
      uptime_s: Math.floor((Date.now() - this.startedAt.getTime()) / 1000),
      server_errors_5m: this.serverErrors.count(),
      agents: held.map((n, i) => ({
        node_id: n.node_id,
        answer_ms: pings[i],
        version: n.version,
        started_at: n.started_at?.toISOString() ?? null,
        connected_at: n.connected_at.toISOString(),
        draining: n.draining,
      })),
    };
  }

  /** Stops the beat and removes this instance's row (the others stop asking it at once). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    // A store that hangs must not hold the stop: the row then ages out in 15 s by itself.
    const gone = (async () => {
      await this.#beating;
      if (this.#url) await this.#store.db.deleteFrom('cp_instances').where('instance_id', '=', this.instanceId).execute();
    })().catch(ignore('leaving the registry is best effort; a row left behind is dropped when its heartbeat lapses'));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([gone, new Promise((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)))]);
    clearTimeout(timer);
  }
}

/** Whether `url` names only this machine (loopback) or no machine at all (0.0.0.0, ::). */
export function localOnly(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return false;
  }
  return host === 'localhost' || host.endsWith('.localhost') || /^127\./.test(host) || host === '::1' || host === '0.0.0.0' || host === '::' || /^::ffff:127\./.test(host) || host === '::ffff:7f00:1';
}

/** The token instances send each other: made by the first instance, read by every other. */
async function peerToken(store: Store): Promise<string> {
  const made = randomBytes(24).toString('base64url');
  await sql`insert into platform_settings (key, value) values (${TOKEN_KEY}, ${JSON.stringify(made)}::jsonb) on conflict do nothing`.execute(store.db);
  const row = await store.db.selectFrom('platform_settings').select('value').where('key', '=', TOKEN_KEY).executeTakeFirstOrThrow();
  return row.value as string;
}
