/**
 * A company's connections (INTERFACE.md, Connections): webhook connections, recording import
 * connections (their settings in `recording-imports/settings.ts`), and legacy connections (a name
 * only: the target of the legacy lead and do-not-call imports). Settings are
 * checked on the way in (the address by the guarded client's rules, the event patterns by the
 * spec's syntax, the campaign filter against the company's campaigns) and every refusal says why;
 * a webhook's view lists in `warnings` the patterns that match no event the platform emits.
 * The signing secret is returned by creation and rotation only; no view carries it, nor any of a
 * recording import's secrets.
 */
import { z } from 'zod';
import { Invalid, NotFound } from '../../shared/errors.ts';
import { checkPatterns, patternWarnings } from './event-patterns.ts';
import { EVENT_NAMES } from '../../shared/events.ts';
import { newId } from '../../shared/ids.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { holdForNewConnection } from './fan-out-lock.ts';
import { checkTargetAddress, type LookupFn, type OutboundClient, type OutboundResult } from '../infra/outbound-http/guarded-client.ts';
import { messageHeaders, newSigningSecret } from './signature.ts';
import { delivered } from './attempt-outcomes.ts';
import { ANSWER_LIMIT_MS } from './retry-schedule.ts';
import { checkedSettings, RECORDING_IMPORT_KEYS, RecordingImportFields, settingsView, type ImportSettings, type RecordingImportInput } from '../imports/recordings/settings.ts';
import { testImportSource } from '../imports/recordings/sources.ts';

export type ConnectorDeps = { store: Store; clock: Clock; client: OutboundClient; allowPrivate: boolean; lookup?: LookupFn };

/** The longest grace a rotated-out secret may keep signing, and the default. */
export const MAX_GRACE_HOURS = 168;
export const DEFAULT_GRACE_HOURS = 24;

const Name = z.string().trim().min(1).max(100);
const Url = z.string().trim().min(1).max(2048);
const CampaignIds = z.array(z.string().min(1).max(100)).max(1000).nullable();

const WEBHOOK_KEYS = ['url', 'events', 'campaign_ids', 'full_numbers'] as const;

export const NewConnector = z.object({
  kind: z.string(),
  name: Name,
  url: Url.optional(),
  events: z.unknown().optional(),
  campaign_ids: CampaignIds.optional(),
  full_numbers: z.boolean().optional(),
  ...z.object(RecordingImportFields).partial().shape,
});

export const ConnectorChanges = z
  .object({ name: Name, url: Url, events: z.unknown(), campaign_ids: CampaignIds, full_numbers: z.boolean(), ...RecordingImportFields })
  .partial()
  .refine((v) => Object.keys(v).length > 0, 'give at least one setting to change (name, or the settings of the connection\'s kind)');

export const Rotation = z.object({ grace_hours: z.number().min(0).max(MAX_GRACE_HOURS).optional() }).strict();

type Row = {
  id: string;
  kind: string;
  name: string;
  state: string;
  url: string | null;
  events: string[] | null;
  campaign_ids: string[] | null;
  full_numbers: boolean;
  previous_secret_until: Date | null;
  consecutive_failures: number;
  needs_attention_at: Date | null;
  settings: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
};

const VIEW_COLUMNS = [
  'id', 'kind', 'name', 'state', 'url', 'events', 'campaign_ids', 'full_numbers', 'previous_secret_until',
  'consecutive_failures', 'needs_attention_at', 'settings', 'created_at', 'updated_at',
] as const;

/** A connection as the API shows it: settings and state, never a secret. */
export function connectorView(r: Row, now: number) {
  // A legacy connection has a name and nothing else to show.
  if (r.kind === 'legacy') return { id: r.id, kind: r.kind, name: r.name, state: r.state, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() };
  if (r.kind === 'recording_import') {
    const settings = settingsView(r.settings as ImportSettings);
    return { id: r.id, kind: r.kind, name: r.name, state: r.state, ...settings, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() };
  }
  return {
    id: r.id,
    kind: r.kind,
    name: r.name,
    state: r.state,
    url: r.url,
    events: r.events ?? [],
    campaign_ids: r.campaign_ids ?? [],
    full_numbers: r.full_numbers,
    failures_in_a_row: r.consecutive_failures,
    needs_attention_since: r.needs_attention_at?.toISOString() ?? null,
    previous_secret_valid_until: r.previous_secret_until && r.previous_secret_until.getTime() > now ? r.previous_secret_until.toISOString() : null,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
    // Patterns that match no event the platform emits are kept, and said so here.
    warnings: patternWarnings(r.events ?? [], EVENT_NAMES),
  };
}

async function checkedUrl(deps: ConnectorDeps, url: string): Promise<string> {
  const r = await checkTargetAddress(url, { allowPrivate: deps.allowPrivate, lookup: deps.lookup });
  if (!r.ok) throw new Invalid(`url: ${r.reason}`);
  return r.url.toString();
}

function checkedEvents(events: unknown): string[] {
  const r = checkPatterns(events);
  if (!r.ok) throw new Invalid(r.reason);
  return r.patterns;
}

async function checkedCampaigns(deps: ConnectorDeps, tenantId: string, ids: string[] | null | undefined): Promise<string[] | null> {
  if (!ids || ids.length === 0) return null;
  const unique = [...new Set(ids)];
  const found = await deps.store.db.selectFrom('campaigns').select('id').where('tenant_id', '=', tenantId).where('id', 'in', unique).execute();
  const known = new Set(found.map((f) => f.id));
  const missing = unique.filter((id) => !known.has(id));
  if (missing.length) throw new Invalid(`campaign_ids: no such campaign in this company: ${missing.slice(0, 5).join(', ')}`);
  return unique;
}

async function row(deps: ConnectorDeps, tenantId: string, id: string): Promise<Row> {
  const r = await deps.store.db.selectFrom('connectors').select(VIEW_COLUMNS).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  if (!r) throw new NotFound(`no connection ${id}`);
  return r as Row;
}

export async function createConnector(deps: ConnectorDeps, tenantId: string, userId: string | null, input: z.infer<typeof NewConnector>) {
  if (input.kind === 'legacy') return createLegacyConnector(deps, tenantId, userId, input);
  if (input.kind === 'recording_import') return createRecordingImport(deps, tenantId, userId, input);
  if (input.kind !== 'webhook') {
    throw new Invalid(`kind: expected "webhook", "recording_import" or "legacy" (got ${JSON.stringify(input.kind)})`);
  }
  const strayImport = RECORDING_IMPORT_KEYS.find((k) => input[k] !== undefined);
  if (strayImport) throw new Invalid(`${strayImport}: only for a recording_import connection`);
  if (input.url === undefined) throw new Invalid('url: required for a webhook connection');
  const events = checkedEvents(input.events);
  const url = await checkedUrl(deps, input.url);
  const campaigns = await checkedCampaigns(deps, tenantId, input.campaign_ids);
  const secret = newSigningSecret();
  const id = newId('con');
  await deps.store.transaction(async (tx) => {
    // Event writes under way end first (see `holdForNewConnection`); then the connection's time.
    await holdForNewConnection(tx);
    await insertConnector(tx, id, tenantId, userId, input, { url, events, campaigns, secret });
  });
  return { ...connectorView(await row(deps, tenantId, id), deps.clock.now()), signing_secret: secret };
}

/** The recording import fields given in `input`. */
function importFieldsOf(input: Record<string, unknown>): RecordingImportInput {
  return Object.fromEntries(RECORDING_IMPORT_KEYS.filter((k) => input[k] !== undefined).map((k) => [k, input[k]])) as RecordingImportInput;
}

/** A recording import connection: its settings checked (`checkedSettings`), secrets kept and never shown. */
async function createRecordingImport(deps: ConnectorDeps, tenantId: string, userId: string | null, input: z.infer<typeof NewConnector>) {
  const extra = WEBHOOK_KEYS.find((k) => input[k] !== undefined);
  if (extra) throw new Invalid(`${extra}: not a setting of a recording_import connection`);
  const settings = await checkedSettings(null, importFieldsOf(input), { allowPrivate: deps.allowPrivate, lookup: deps.lookup });
  const id = newId('con');
  const now = new Date();
  await deps.store.db
    .insertInto('connectors')
    .values({
      id, tenant_id: tenantId, kind: 'recording_import', name: input.name, url: null, events: null, campaign_ids: null, secret: null,
      previous_secret: null, previous_secret_until: null, needs_attention_at: null, settings: JSON.stringify(settings), created_by: userId, created_at: now, updated_at: now,
    })
    .execute();
  return connectorView(await row(deps, tenantId, id), deps.clock.now());
}

/** A legacy connection: `{kind:"legacy", name}` and nothing else (it has no address, events or secret). */
async function createLegacyConnector(deps: ConnectorDeps, tenantId: string, userId: string | null, input: z.infer<typeof NewConnector>) {
  const extra = [...WEBHOOK_KEYS, ...RECORDING_IMPORT_KEYS].filter((k) => input[k] !== undefined);
  if (extra.length) throw new Invalid(`${extra[0]}: a legacy connection takes only kind and name`);
  const id = newId('con');
  const now = new Date();
  await deps.store.db
    .insertInto('connectors')
    .values({
      id, tenant_id: tenantId, kind: 'legacy', name: input.name, url: null, events: null, campaign_ids: null, secret: null,
      previous_secret: null, previous_secret_until: null, needs_attention_at: null, settings: null, created_by: userId, created_at: now, updated_at: now,
    })
    .execute();
  return connectorView(await row(deps, tenantId, id), deps.clock.now());
}

async function insertConnector(
  tx: Tx,
  id: string,
  tenantId: string,
  userId: string | null,
  input: z.infer<typeof NewConnector>,
  checked: { url: string; events: string[]; campaigns: string[] | null; secret: string },
): Promise<void> {
  const { url, events, campaigns, secret } = checked;
  // Wall time (not the schedule clock): a connection gets the events written from now on.
  const now = new Date();
  await tx
    .insertInto('connectors')
    .values({
      id,
      tenant_id: tenantId,
      kind: 'webhook',
      name: input.name,
      url,
      events: JSON.stringify(events),
      campaign_ids: campaigns ? JSON.stringify(campaigns) : null,
      full_numbers: input.full_numbers ?? false,
      secret,
      previous_secret: null,
      previous_secret_until: null,
      needs_attention_at: null,
      settings: null,
      created_by: userId,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

export async function listConnectors(deps: ConnectorDeps, tenantId: string) {
  const rows = await deps.store.db.selectFrom('connectors').select(VIEW_COLUMNS).where('tenant_id', '=', tenantId).orderBy('id').execute();
  return rows.map((r) => connectorView(r as Row, deps.clock.now()));
}

export async function getConnector(deps: ConnectorDeps, tenantId: string, id: string) {
  return connectorView(await row(deps, tenantId, id), deps.clock.now());
}

export async function updateConnector(deps: ConnectorDeps, tenantId: string, id: string, changes: z.infer<typeof ConnectorChanges>) {
  const current = await row(deps, tenantId, id);
  const notName = Object.keys(changes).filter((k) => k !== 'name');
  if (current.kind === 'legacy' && notName.length) throw new Invalid(`${notName[0]}: a legacy connection has only a name`);
  const set: Record<string, unknown> = { updated_at: new Date(deps.clock.now()) };
  if (changes.name !== undefined) set.name = changes.name;
  if (current.kind === 'recording_import') {
    const extra = WEBHOOK_KEYS.find((k) => changes[k] !== undefined);
    if (extra) throw new Invalid(`${extra}: not a setting of a recording_import connection`);
    const fields = importFieldsOf(changes);
    if (Object.keys(fields).length) {
      set.settings = JSON.stringify(await checkedSettings(current.settings as ImportSettings, fields, { allowPrivate: deps.allowPrivate, lookup: deps.lookup }));
    }
    await deps.store.db.updateTable('connectors').set(set).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
    return getConnector(deps, tenantId, id);
  }
  const strayImport = RECORDING_IMPORT_KEYS.find((k) => changes[k] !== undefined);
  if (strayImport) throw new Invalid(`${strayImport}: only for a recording_import connection`);
  if (changes.url !== undefined) set.url = await checkedUrl(deps, changes.url);
  if (changes.events !== undefined) set.events = JSON.stringify(checkedEvents(changes.events));
  if (changes.campaign_ids !== undefined) {
    const c = await checkedCampaigns(deps, tenantId, changes.campaign_ids);
    set.campaign_ids = c ? JSON.stringify(c) : null;
  }
  if (changes.full_numbers !== undefined) set.full_numbers = changes.full_numbers;
  await deps.store.db.updateTable('connectors').set(set).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  return getConnector(deps, tenantId, id);
}

/** Removes a connection with its deliveries and their log. */
export async function deleteConnector(deps: ConnectorDeps, tenantId: string, id: string): Promise<void> {
  const r = await deps.store.db.deleteFrom('connectors').where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  if (Number(r.numDeletedRows) === 0) throw new NotFound(`no connection ${id}`);
}

/** Re-arms a connection in Needs attention (a no-op for an active one). */
export async function switchOn(deps: ConnectorDeps, tenantId: string, id: string) {
  await row(deps, tenantId, id);
  await deps.store.db
    .updateTable('connectors')
    .set({ state: 'active', consecutive_failures: 0, needs_attention_at: null, updated_at: new Date(deps.clock.now()) })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute();
  return getConnector(deps, tenantId, id);
}

/** A new secret, shown once; the old one keeps signing beside it for `graceHours`. */
export async function rotateSecret(deps: ConnectorDeps, tenantId: string, id: string, graceHours = DEFAULT_GRACE_HOURS) {
  const current = await deps.store.db.selectFrom('connectors').select(['secret', 'kind']).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  if (!current) throw new NotFound(`no connection ${id}`);
  if (current.kind !== 'webhook') throw new Invalid('only a webhook connection has a signing secret');
  const secret = newSigningSecret();
  const now = deps.clock.now();
  const until = graceHours > 0 ? new Date(now + graceHours * 3_600_000) : null;
  await deps.store.db
    .updateTable('connectors')
    .set({ secret, previous_secret: until ? current.secret : null, previous_secret_until: until, updated_at: new Date(now) })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute();
  return { id, signing_secret: secret, previous_secret_valid_until: until?.toISOString() ?? null };
}

/** What an answer means, for the Test action and the delivery log. */
export function describeOutcome(r: OutboundResult): string {
  switch (r.kind) {
    case 'answered':
      if (r.status >= 200 && r.status < 300) return `answered ${r.status} in ${Math.round(r.durationMs)} ms`;
      if (r.status >= 300 && r.status < 400) return `answered ${r.status}: redirects are not followed, so this is a failure`;
      return `answered ${r.status}, which is a failure (only 2xx counts)`;
    case 'timeout':
      return `no answer within ${ANSWER_LIMIT_MS / 1000} s`;
    case 'connection_refused':
      return 'connection refused';
    case 'refused_address':
      return `address refused: ${r.message}`;
    default:
      return `could not deliver: ${r.message}`;
  }
}

/**
 * The Test action: a webhook gets a signed `vd.test.ping` now, and the answer says whether the
 * address answered 2xx; a recording import lists its source and says how many recordings it sees.
 */
export async function testConnector(deps: ConnectorDeps, tenantId: string, id: string) {
  const c = await deps.store.db
    .selectFrom('connectors')
    .select(['kind', 'url', 'secret', 'previous_secret', 'previous_secret_until', 'settings'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!c) throw new NotFound(`no connection ${id}`);
  if (c.kind === 'recording_import') return testImportSource(deps.client, c.settings as ImportSettings);
  if (c.kind !== 'webhook' || !c.url || !c.secret) throw new Invalid('a legacy connection has nothing to test');
  const now = deps.clock.now();
  const eventId = newId('evt');
  const body = JSON.stringify({
    id: eventId,
    tenant_id: tenantId,
    at: new Date(now).toISOString(),
    source: 'control-plane',
    subject: 'vd.test.ping',
    data: { connector_id: id, message: 'This is a test message from your outbound calling platform.' },
  });
  const keys = { secret: c.secret, previous_secret: c.previous_secret, previous_secret_until: c.previous_secret_until?.getTime() ?? null };
  const result = await deps.client.post(c.url, body, messageHeaders(body, 'vd.test.ping', newId('dlv'), now, keys));
  const ok = delivered(result);
  return { ok, status: result.kind === 'answered' ? result.status : null, message: describeOutcome(result), event_id: eventId };
}
