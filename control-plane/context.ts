/**
 * The typed bag of services, built once at start (`createServices`) and read in handlers with
 * `c.get('services')`. Tests build it with overrides; there is no DI framework.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Config } from '../shared/config.ts';
import { createLogger, type Logger } from '../shared/logger.ts';
import { ApiKeys } from './auth/api-keys.ts';
import type { Coordinator } from './coordination/coordinator.ts';
import { MemoryCoordinator } from './coordination/memory.ts';
import { RedisCoordinator } from './coordination/redis.ts';
import { openStore, type Store } from './db/store.ts';

export type Services = {
  config: Config;
  logger: Logger;
  store: Store;
  coordinator: Coordinator;
  apiKeys: ApiKeys;
  /** This instance's name in leases and logs. */
  instanceId: string;
  close(): Promise<void>;
};

export type ServiceOverrides = Partial<Pick<Services, 'logger' | 'store' | 'coordinator'>>;

/** Builds the services from the settings: PGlite or Postgres, in-process or Redis coordination. */
export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const logger = overrides.logger ?? createLogger(config.LOG_LEVEL);
  const instanceId = config.VD_INSTANCE_ID ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const store = overrides.store ?? (await openStore(config.DATABASE_URL, config.VD_DATA_DIR));
  const coordinator = overrides.coordinator ?? (config.REDIS_URL ? new RedisCoordinator(config.REDIS_URL, { keyPrefix: config.VD_REDIS_KEY_PREFIX }) : new MemoryCoordinator());
  const apiKeys = new ApiKeys(store, coordinator);
  await apiKeys.start();
  return {
    config,
    logger: logger.child({ instance: instanceId }),
    store,
    coordinator,
    apiKeys,
    instanceId,
    async close() {
      await apiKeys.stop();
      if (!overrides.coordinator) await coordinator.close();
      if (!overrides.store) await store.close();
    },
  };
}
