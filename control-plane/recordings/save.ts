/**
 * Saving a recording, whatever brought it (a media agent's upload, a recording import): its first
 * bytes say whether it is audio at all and which format (WAV or MP3, whatever its name or
 * declared type), its row is found or made, the file streams into the recording store under
 * `<tenant>/<id>.<format>` (its duration read on the way), and then ONE transaction marks the row
 * stored, emits `vd.call.recording_stored` and runs the "recording stored" hooks (the QA Bot
 * queues its review there), so a stored recording is never without its event or its review. A
 * file that is not audio is never stored, so never scored or billed.
 */
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Selectable } from 'kysely';
import { newId } from '../../shared/ids.ts';
import type { RecordingFormat, RecordingSource } from '../infra/db/schema/index.ts';
import type { RecordingsTable } from '../infra/db/schema/recordings.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { AudioInfo, audioFormatOf, FORMAT_HEAD_BYTES } from './audio-info.ts';
import { contentTypeOf, RecordingIncomplete, RecordingTooLarge, type PutBody, type RecordingStore } from './store.ts';

export type RecordingRow = Selectable<RecordingsTable>;

/** Runs inside the transaction that marks a recording stored; a throw undoes the whole save. */
export type RecordingStoredHook = (tx: Tx, recording: RecordingRow) => Promise<void>;

export type RecordingDeps = { store: Store; recordings: RecordingStore; recordingStored: RecordingStoredHook[] };

export type SaveRecordingInput = {
  tenantId: string;
  source: RecordingSource;
  /** The call recorded (required for source `call`). */
  callId?: string | null;
  campaignId?: string | null;
  /**
   * The recording import connection, its source's identity (`sourceIdentity`) and the file's
   * unique name in that source (source `import`): one recording per company, source and name.
   */
  connectorId?: string | null;
  sourceId?: string | null;
  sourceName?: string | null;
  /** The format the sender named (a Content-Type, a file's extension); the bytes decide. */
  format: RecordingFormat;
  body: PutBody;
  /** The body's length when known (Content-Length). */
  length?: number | null;
  maxBytes: number;
};

/** The recording was stored already (a second upload of it): nothing was changed. */
export class RecordingAlreadyStored extends Error {
  readonly recording: RecordingRow;
  constructor(recording: RecordingRow) {
    super(`recording ${recording.id} is already stored`);
    this.name = 'RecordingAlreadyStored';
    this.recording = recording;
  }
}

/** The file's first bytes are neither WAV nor MP3. Not worth retrying: the same bytes come next time. */
export class NotAnAudioFile extends Error {
  constructor() {
    super('not an audio file');
    this.name = 'NotAnAudioFile';
  }
}

/**
 * Why a save failed, as the company may read it (a recording's `error`, an import file's): the
 * size limit, or a body that broke off or did not match its length, say so; anything else is our
 * own store's failure, whose details (a folder's paths, a bucket's answers) stay in the logs.
 */
export function saveFailureReason(err: unknown): string {
  if (err instanceof RecordingTooLarge || err instanceof RecordingIncomplete || err instanceof NotAnAudioFile) return err.message.slice(0, 500);
  return 'the recording store failed: try again';
}

/** The store key of a recording. */
export function storageKey(row: Pick<RecordingRow, 'tenant_id' | 'id' | 'format'>): string {
  return `${row.tenant_id}/${row.id}.${row.format}`;
}

/** An import's source identity; without one (a caller that knows only the connection) the connection stands for it. */
function sourceIdOf(input: SaveRecordingInput): string | null {
  if (input.source !== 'import') return null;
  return input.sourceId ?? (input.connectorId ? `connection ${input.connectorId}` : null);
}

/**
 * The recording's row, made when there is none (status `waiting_upload`) and counted as one more
 * attempt; a stored one throws `RecordingAlreadyStored`.
 */
async function claim(store: Store, input: SaveRecordingInput): Promise<RecordingRow> {
  const values = {
    id: newId('rec'),
    tenant_id: input.tenantId,
    call_id: input.callId ?? null,
    campaign_id: input.campaignId ?? null,
    source: input.source,
    connector_id: input.connectorId ?? null,
    source_id: sourceIdOf(input),
    source_name: input.sourceName ?? null,
    status: 'waiting_upload' as const,
    format: input.format,
    attempts: 1,
  };
  const byCall = input.source === 'call';
  if (byCall && !input.callId) throw new Error('a call recording needs its call id');
  if (!byCall && (!input.connectorId || !input.sourceName)) throw new Error('an imported recording needs its connection and unique name');
  const row = await store.db
    .insertInto('recordings')
    .values(values)
    .onConflict((oc) =>
      (byCall ? oc.column('call_id').where('call_id', 'is not', null) : oc.columns(['tenant_id', 'source_id', 'source_name']).where('source', '=', 'import'))
        .doUpdateSet((eb) => ({ attempts: eb('recordings.attempts', '+', 1), format: eb.ref('excluded.format'), connector_id: eb.ref('excluded.connector_id') }))
        .where('recordings.status', '<>', 'stored'),
    )
    .returningAll()
    .executeTakeFirst();
  if (row) return row;
  const stored = await store.db
    .selectFrom('recordings')
    .selectAll()
    .$call((q) =>
      byCall
        ? q.where('call_id', '=', input.callId!)
        : q.where('tenant_id', '=', input.tenantId).where('source', '=', 'import').where('source_id', '=', sourceIdOf(input)!).where('source_name', '=', input.sourceName!),
    )
    .executeTakeFirstOrThrow();
  throw new RecordingAlreadyStored(stored);
}

/**
 * The first `n` bytes of `body` (fewer when it ends sooner), and the whole body again as a
 * stream that starts with them. A body that breaks off before is `RecordingIncomplete`.
 */
async function peek(body: PutBody, n: number): Promise<{ head: Buffer; body: Readable }> {
  const source = body instanceof Readable ? body : Readable.fromWeb(body as WebReadableStream<Uint8Array>);
  const it: AsyncIterator<Buffer | string> = source[Symbol.asyncIterator]();
  const first: Buffer[] = [];
  let size = 0;
  let ended = false;
  try {
    while (size < n) {
      const next = await it.next();
      if (next.done) {
        ended = true;
        break;
      }
      const b = Buffer.from(next.value);
      first.push(b);
      size += b.length;
    }
  } catch (err) {
    throw new RecordingIncomplete(`the body broke off: ${(err as Error)?.message ?? String(err)}`);
  }
  const head = Buffer.concat(first, size);
  const whole = Readable.from(
    (async function* () {
      if (head.length) yield head;
      if (ended) return;
      for (let next = await it.next(); !next.done; next = await it.next()) yield Buffer.from(next.value);
    })(),
  );
  return { head: head.subarray(0, n), body: whole };
}

/**
 * The call a media node uploads the recording of (`PUT /agent/v1/recordings/{call_id}`): only a
 * call placed on that node; undefined for any other, which the agent is told is not found.
 */
export async function callOfNode(store: Store, callId: string, nodeId: string): Promise<{ id: string; tenant_id: string; campaign_id: string | null } | undefined> {
  return store.db.selectFrom('calls').select(['id', 'tenant_id', 'campaign_id']).where('id', '=', callId).where('node_id', '=', nodeId).executeTakeFirst();
}

/**
 * Streams `input.body` into the recording store and marks the recording stored (event and hooks
 * in the same transaction). The format is the one its first bytes show (`audioFormatOf`); bytes
 * that are neither WAV nor MP3 mark the recording `failed` with `not an audio file` and throw
 * `NotAnAudioFile` before anything is stored. A body past `maxBytes` marks the recording `failed`
 * (it would be as large next time) and throws `RecordingTooLarge`; any other failure keeps it
 * `waiting_upload` with the reason noted (`saveFailureReason`: never the store's own details),
 * and throws, for the sender to try again (a recording import marks it `failed` when it gives
 * the file up).
 */
export async function saveRecording(deps: RecordingDeps, input: SaveRecordingInput): Promise<RecordingRow> {
  const { head, body } = await peek(input.body, FORMAT_HEAD_BYTES);
  const format = audioFormatOf(head);
  const row = await claim(deps.store, { ...input, format: format ?? input.format });
  if (format === null) {
    body.destroy();
    await deps.store.db.updateTable('recordings').set({ status: 'failed', error: 'not an audio file' }).where('id', '=', row.id).where('status', '<>', 'stored').execute();
    throw new NotAnAudioFile();
  }
  const key = storageKey(row);
  const info = new AudioInfo(format);
  let bytes: number;
  try {
    ({ bytes } = await deps.recordings.put(key, body, { maxBytes: input.maxBytes, contentType: contentTypeOf(format), length: input.length, onChunk: (c) => info.push(c) }));
  } catch (err) {
    const tooLarge = err instanceof RecordingTooLarge;
    await deps.store.db
      .updateTable('recordings')
      .set({ error: saveFailureReason(err), ...(tooLarge ? { status: 'failed' as const } : {}) })
      .where('id', '=', row.id)
      .where('status', '<>', 'stored')
      .execute();
    throw err;
  }
  const duration = info.duration();
  return deps.store.transaction(async (tx) => {
    const stored = await tx
      .updateTable('recordings')
      .set({ status: 'stored', bytes, duration_s: duration, storage_key: key, stored_at: new Date(), error: null })
      .where('id', '=', row.id)
      .where('status', '<>', 'stored')
      .returningAll()
      .executeTakeFirst();
    // Another upload of the same recording stored it first (same key, same file): its event was sent.
    if (!stored) throw new RecordingAlreadyStored(await tx.selectFrom('recordings').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow());
    await emit(tx, [
      {
        subject: 'vd.call.recording_stored',
        tenant_id: stored.tenant_id,
        about: stored.call_id ?? stored.id,
        campaign_id: stored.campaign_id,
        data: {
          recording_id: stored.id,
          call_id: stored.call_id,
          campaign_id: stored.campaign_id,
          source: stored.source,
          bytes,
          duration_s: duration,
          format: stored.format,
        },
      },
    ]);
    for (const hook of deps.recordingStored) await hook(tx, stored);
    return stored;
  });
}

/** A recording as the company reads it. */
export function recordingView(r: RecordingRow) {
  return {
    id: r.id,
    call_id: r.call_id,
    campaign_id: r.campaign_id,
    source: r.source,
    source_name: r.source_name,
    status: r.status,
    format: r.format,
    bytes: r.bytes === null ? null : Number(r.bytes),
    duration_s: r.duration_s,
    error: r.error,
    attempts: r.attempts,
    written_at: r.written_at?.toISOString() ?? null,
    stored_at: r.stored_at?.toISOString() ?? null,
    created_at: r.created_at.toISOString(),
  };
}
