/**
 * API keys: creation and revocation by a company owner or admin, and the look-up behind every
 * `Authorization: Bearer` request. Look-ups are cached for a short time on each instance; a
 * revocation (or a company's suspension) is published through the coordinator so every instance
 * drops the key from its cache at once.
 */
import { ignore, Invalid, NotFound } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import type { Coordinator, Unsubscribe } from '../infra/coordination/coordinator.ts';
import type { Store } from '../infra/db/store.ts';
import { isWellFormedKey, keyPrefix, newKeyValue, sha256Hex } from './api-key-format.ts';
import { KEY_SCOPES, type KeyPrincipal } from './principal.ts';
import { CHANNELS } from '../infra/coordination/channels.ts';

/** The channel on which instances tell each other to forget cached keys. */
export const KEYS_CHANNEL = CHANNELS.keysInvalidate;

export type ApiKeyView = {
  id: string;
  name: string;
  scopes: string[];
  prefix: string;
  created_at: string;
  revoked_at: string | null;
};

/** A cached look-up; `tenantId` is kept for refused keys too, so a company's notice reaches them. */
type Cached = { principal: KeyPrincipal | null; tenantId: string | null; until: number };

/** The key look-up with its per-instance cache. */
export class ApiKeys {
  readonly #store: Store;
  readonly #coordinator: Coordinator;
  readonly #ttlMs: number;
  readonly #cache = new Map<string, Cached>();
  #unsubscribe: Unsubscribe | null = null;
  #retry: NodeJS.Timeout | null = null;
  #stopped = false;

  constructor(store: Store, coordinator: Coordinator, ttlMs = 2000) {
    this.#store = store;
    this.#coordinator = coordinator;
    this.#ttlMs = ttlMs;
  }

  /**
   * Listens for invalidation notices from every instance. When the coordinator cannot be reached,
   * the instance still starts: the cache stays off (every look-up reads the store, so a revocation
   * still holds at once) and the subscription is retried each second until it is in place.
   */
  async start(): Promise<void> {
    this.#stopped = false;
    await this.#subscribe();
  }

  async #subscribe(): Promise<void> {
    this.#retry = null;
    try {
      const unsubscribe = await this.#coordinator.subscribe(KEYS_CHANNEL, (msg) => this.#forget(msg));
      if (this.#stopped) return void (await unsubscribe().catch(ignore('stopped while subscribing: the subscription is dropped and the coordinator may be gone')));
      this.#unsubscribe = unsubscribe;
    } catch {
      if (!this.#stopped) this.#retry = setTimeout(() => void this.#subscribe(), 1000);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = null;
    await this.#unsubscribe?.();
    this.#unsubscribe = null;
  }

  #forget(msg: string): void {
    if (msg === '*') return this.#cache.clear();
    if (msg.startsWith('tenant:')) {
      const tenant = msg.slice('tenant:'.length);
      for (const [h, c] of this.#cache) if (c.tenantId === tenant) this.#cache.delete(h);
      return;
    }
    this.#cache.delete(msg);
  }

  /**
   * The key behind a bearer value, or null when it is malformed, unknown, revoked, or its company
   * is not switched on. A malformed value is refused without a database look-up.
   */
  async resolve(value: string): Promise<KeyPrincipal | null> {
    if (!isWellFormedKey(value)) return null;
    const hash = sha256Hex(value);
    const cached = this.#unsubscribe !== null;
    const hit = cached ? this.#cache.get(hash) : undefined;
    if (hit && hit.until > Date.now()) return hit.principal;
    const row = await this.#store.db
      .selectFrom('api_keys as k')
      .innerJoin('companies as c', 'c.id', 'k.tenant_id')
      .select(['k.id', 'k.tenant_id', 'k.scopes', 'k.revoked_at', 'c.status', 'c.plan'])
      .where('k.secret_hash', '=', hash)
      .executeTakeFirst();
    const principal: KeyPrincipal | null =
      row && row.revoked_at === null && row.status === 'on'
        ? { kind: 'key', keyId: row.id, tenantId: row.tenant_id, plan: row.plan, scopes: new Set(row.scopes) }
        : null;
    if (this.#cache.size > 50_000) this.#cache.clear();
    if (cached) this.#cache.set(hash, { principal, tenantId: row?.tenant_id ?? null, until: Date.now() + this.#ttlMs });
    return principal;
  }

  /** Creates a key; the value is in the answer and nowhere else, ever. */
  async create(tenantId: string, createdBy: string, name: string, scopes: string[]): Promise<ApiKeyView & { key: string }> {
    const bad = scopes.filter((s) => !(KEY_SCOPES as readonly string[]).includes(s));
    if (bad.length) throw new Invalid(`unknown scope ${bad.join(', ')}; scopes are ${KEY_SCOPES.join(', ')}`);
    if (scopes.length === 0) throw new Invalid('scopes must name at least one scope');
    const key = newKeyValue();
    const row = await this.#store.db
      .insertInto('api_keys')
      .values({ id: newId('key'), tenant_id: tenantId, name, scopes: [...new Set(scopes)], prefix: keyPrefix(key), secret_hash: sha256Hex(key), created_by: createdBy, revoked_at: null })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { ...view(row), key };
  }

  /** The company's keys, newest first, without their values. */
  async list(tenantId: string): Promise<ApiKeyView[]> {
    const rows = await this.#store.db.selectFrom('api_keys').selectAll().where('tenant_id', '=', tenantId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
    return rows.map(view);
  }

  /** Revokes a key of the company for good and tells every instance to forget it. */
  async revoke(tenantId: string, keyId: string): Promise<void> {
    const row = await this.#store.db
      .updateTable('api_keys')
      .set({ revoked_at: new Date() })
      .where('id', '=', keyId)
      .where('tenant_id', '=', tenantId)
      .where('revoked_at', 'is', null)
      .returning('secret_hash')
      .executeTakeFirst();
    if (!row) {
      const exists = await this.#store.db.selectFrom('api_keys').select('id').where('id', '=', keyId).where('tenant_id', '=', tenantId).executeTakeFirst();
      if (!exists) throw new NotFound(`no API key ${keyId}`);
      return;
    }
    this.#forget(row.secret_hash);
    await this.#coordinator.publish(KEYS_CHANNEL, row.secret_hash);
  }

  /** Tells every instance to forget the cached keys of a company (its status changed). */
  async forgetTenant(tenantId: string): Promise<void> {
    this.#forget(`tenant:${tenantId}`);
    await this.#coordinator.publish(KEYS_CHANNEL, `tenant:${tenantId}`);
  }
}

function view(row: { id: string; name: string; scopes: string[]; prefix: string; created_at: Date; revoked_at: Date | null }): ApiKeyView {
  return { id: row.id, name: row.name, scopes: row.scopes, prefix: row.prefix, created_at: row.created_at.toISOString(), revoked_at: row.revoked_at?.toISOString() ?? null };
}
