/**
 * The AI upstream's settings, one provider per purpose (the voice bot, the QA Bot, transcription):
 * base address, model and key. The key is stored so the platform's own callers can send it
 * (`aiProvider`), and never leaves through the API: a reader learns only whether one is present.
 * A change is an event naming who acted (`vd.platform.ai_settings_changed`, no company: the
 * operators' audit trail only), which carries whether the key changed, never the key.
 *
 * Samples (`recordAiSample`) are what an instance saw of the upstream: a reply's time, a bot
 * session started, ended or failed. Every instance writes them to the store, so `/ai/health`
 * (`health.ts`) gives the whole platform's figures.
 */
import { sql, type Kysely } from 'kysely';
import { Invalid, NotFound } from '../../shared/errors.ts';
import type { Who } from '../../shared/who.ts';
import type { DB, Store, Tx } from '../infra/db/store.ts';
import type { AiPurpose, AiSampleKind } from '../infra/db/schema/index.ts';
import { emit } from '../infra/runtime/outbox.ts';

/** The purposes an upstream is set for. */
export const AI_PURPOSES = ['bot', 'qa', 'transcription'] as const satisfies readonly AiPurpose[];
export type { AiPurpose, AiSampleKind };

/** A provider as the API shows it: never its key. */
export type AiProviderView = { purpose: AiPurpose; base_url: string | null; model: string | null; key_present: boolean; updated_at: string | null };

/** What a caller of the upstream needs. */
export type AiProvider = { base_url: string; model: string; api_key: string | null };

/** Longest base address and model name kept. */
export const MAX_BASE_URL = 2048;
export const MAX_MODEL = 200;
/** Longest key kept (real keys are under 200 characters). */
export const MAX_API_KEY = 1024;

type Db = Store | Tx | Kysely<DB>;

function dbOf(db: Db): Kysely<DB> {
  return 'db' in db && typeof (db as Store).transaction === 'function' ? (db as Store).db : (db as Kysely<DB>);
}

/**
 * The upstream set for `purpose`, with its key, for the platform's own calls (the QA Bot, a
 * probe); null when none is set. Never hand what this returns to a log line or an answer.
 */
export async function aiProvider(db: Db, purpose: AiPurpose): Promise<AiProvider | null> {
  const row = await dbOf(db).selectFrom('ai_providers').select(['base_url', 'model', 'api_key']).where('purpose', '=', purpose).executeTakeFirst();
  return row ?? null;
}

/** The upstream of every purpose, in the order of AI_PURPOSES (null: none set), in one statement. */
export async function aiProviders(db: Db): Promise<Array<AiProvider | null>> {
  const rows = await dbOf(db).selectFrom('ai_providers').select(['purpose', 'base_url', 'model', 'api_key']).execute();
  return AI_PURPOSES.map((purpose) => {
    const r = rows.find((x) => x.purpose === purpose);
    return r ? { base_url: r.base_url, model: r.model, api_key: r.api_key } : null;
  });
}

/** Every purpose, in the order of AI_PURPOSES, set or not (unset: nulls and no key). */
export async function listAiProviders(db: Db): Promise<AiProviderView[]> {
  const rows = await dbOf(db).selectFrom('ai_providers').select(['purpose', 'base_url', 'model', 'updated_at', (eb) => eb('api_key', 'is not', null).as('key_present')]).execute();
  const byPurpose = new Map(rows.map((r) => [r.purpose, r]));
  return AI_PURPOSES.map((purpose) => {
    const r = byPurpose.get(purpose);
    return r
      ? { purpose, base_url: r.base_url, model: r.model, key_present: Boolean(r.key_present), updated_at: r.updated_at.toISOString() }
      : { purpose, base_url: null, model: null, key_present: false, updated_at: null };
  });
}

/**
 * Whether `raw` is an upstream base address the platform accepts: http or https, a host, no user
 * name or password (the key goes in its own field, not in an address that is shown), no query or
 * fragment. Shape only: whether the guarded client may reach it is judged at each call.
 */
export function baseUrlProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http:// or https:// address';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http:// or https:// address';
  if (!url.hostname) return 'must name a host';
  if (url.username || url.password) return 'must not carry a user name or password (send the key as api_key)';
  if (url.search || url.hash) return 'must not carry a query or fragment';
  return null;
}

/** The change of one purpose's upstream. `api_key`: absent keeps the stored key, null removes it. */
export type AiProviderChange = { purpose: AiPurpose; base_url: string; model: string; api_key?: string | null };

/** Sets the upstream of one purpose; an event names who did it and whether the key changed. */
export async function setAiProvider(store: Store, by: Who, change: AiProviderChange): Promise<AiProviderView> {
  const problem = baseUrlProblem(change.base_url);
  if (problem) throw new Invalid(`base_url: ${problem}`);
  // A trailing slash would give `//models`: the address is kept without it.
  const baseUrl = change.base_url.replace(/\/+$/, '');
  return store.transaction(async (tx) => {
    const before = await tx.selectFrom('ai_providers').select(['base_url', 'model', 'api_key']).where('purpose', '=', change.purpose).forUpdate().executeTakeFirst();
    const apiKey = change.api_key === undefined ? (before?.api_key ?? null) : change.api_key;
    await tx
      .insertInto('ai_providers')
      .values({ purpose: change.purpose, base_url: baseUrl, model: change.model, api_key: apiKey, updated_at: new Date(), updated_by: by.id })
      .onConflict((oc) => oc.column('purpose').doUpdateSet({ base_url: baseUrl, model: change.model, api_key: apiKey, updated_at: new Date(), updated_by: by.id }))
      .execute();
    const keyChanged = (before?.api_key ?? null) !== apiKey;
    if (!before || before.base_url !== baseUrl || before.model !== change.model || keyChanged) {
      await emit(tx, [
        {
          subject: 'vd.platform.ai_settings_changed',
          tenant_id: null,
          about: change.purpose,
          data: { actor: by, purpose: change.purpose, base_url: baseUrl, model: change.model, key_changed: keyChanged, key_present: apiKey !== null },
        },
      ]);
    }
    const view = (await listAiProviders(tx)).find((p) => p.purpose === change.purpose);
    return view!;
  });
}

/**
 * Removes the upstream of one purpose (the QA Bot goes back to its built-in scorer when `qa` or
 * `transcription` has none); the same event as a change names who did it, with `removed: true`.
 * 404 when none is set.
 */
export async function removeAiProvider(store: Store, by: Who, purpose: AiPurpose): Promise<void> {
  await store.transaction(async (tx) => {
    const gone = await tx.deleteFrom('ai_providers').where('purpose', '=', purpose).returning(['base_url', 'model', 'api_key']).executeTakeFirst();
    if (!gone) throw new NotFound(`no AI provider is set for ${purpose}`);
    await emit(tx, [
      {
        subject: 'vd.platform.ai_settings_changed',
        tenant_id: null,
        about: purpose,
        data: { actor: by, purpose, removed: true, base_url: null, model: null, removed_base_url: gone.base_url, removed_model: gone.model, key_changed: gone.api_key !== null, key_present: false },
      },
    ]);
  });
}

/** One thing an instance saw of the upstream. */
export type AiSample = {
  purpose: AiPurpose;
  /** `reply`: one answer of the upstream (with its time); `session_*`: a bot session's start and end. */
  kind: AiSampleKind;
  /** The reply came (or the session ended) well; false for an error, a time-out, a failed session. */
  ok: boolean;
  /** Milliseconds the upstream took to reply (replies only). */
  reply_ms?: number | null;
  /** Several reply times in one sample (a bot session's report of its replies). */
  reply_times?: number[] | null;
  /** The control-plane instance storing it. */
  instance: string;
  call_id?: string | null;
  node_id?: string | null;
  /** When it happened; default now. */
  at?: Date;
};

/**
 * Stores samples in one statement (arrays as parameters, so a batch of thousands is a handful of
 * parameters). The agent hub's reports go through `AiSampleBuffer` (`samples.ts`), which batches;
 * a caller with a few (the QA Bot's one call) writes them here directly, inside its own
 * transaction if it likes.
 */
export async function recordAiSample(db: Db, samples: AiSample | AiSample[]): Promise<void> {
  const list = Array.isArray(samples) ? samples : [samples];
  if (list.length === 0) return;
  const now = new Date().toISOString();
  const col = <T,>(f: (s: AiSample) => T) => list.map(f);
  await sql`
    insert into ai_samples (at, purpose, kind, ok, reply_ms, reply_times, instance, call_id, node_id)
    select x.at, x.purpose, x.kind, x.ok, x.reply_ms, x.reply_times::float8[], x.instance, x.call_id, x.node_id
    from unnest(${col((s) => s.at?.toISOString() ?? now)}::timestamptz[], ${col((s) => s.purpose)}::text[], ${col((s) => s.kind)}::text[],
      ${col((s) => s.ok)}::boolean[], ${col((s) => s.reply_ms ?? null)}::float8[],
      ${col((s) => (s.reply_times?.length ? `{${s.reply_times.map(Number).join(',')}}` : null))}::text[], ${col((s) => s.instance)}::text[],
      ${col((s) => s.call_id ?? null)}::text[], ${col((s) => s.node_id ?? null)}::text[])
      as x(at, purpose, kind, ok, reply_ms, reply_times, instance, call_id, node_id)`.execute(dbOf(db));
}
