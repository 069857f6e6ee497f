/**
 * What the code under control-plane/ needs, taken from a request's services: the API's routes
 * and the console's pages both build it here.
 */
import type { Context } from 'hono';
import type { ConnectorDeps } from '../../control-plane/webhooks/connectors.ts';
import { queueListCheck } from '../../control-plane/core/checks.ts';
import { findList } from '../../control-plane/core/lists.ts';
import type { ImportDeps } from '../../control-plane/imports/legacy/imports.ts';
import type { AppEnv } from '../env.ts';

/** What the connection code needs, from the request's services (the API's routes and the console's). */
export function connectorDeps(c: Context<AppEnv>): ConnectorDeps {
  const s = c.get('services');
  return { store: s.store, clock: s.clock, client: s.outbound, allowPrivate: s.config.VD_ALLOW_PRIVATE_TARGETS, lookup: s.lookup };
}

/** What the import code needs, from the request's services (the API's routes and the console's). */
export function importDeps(c: Context<AppEnv>): ImportDeps {
  const s = c.get('services');
  const lists = { find: findList, queueCheck: queueListCheck, wake: () => s.checks.wake() };
  return { store: s.store, lists, outbox: s.outbox, log: c.get('log') };
}

/** The request's body as the file, read as it streams in, with its declared length. */
export function upload(c: Context<AppEnv>) {
  const declared = c.req.header('content-length');
  return { body: c.req.raw.body, declaredBytes: declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : null };
}
