/** The recording store the settings name: a bucket when VD_RECORDINGS_BUCKET is set, else the folder. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { OutboundClient } from '../infra/outbound-http/guarded-client.ts';
import { BucketStore, defaultEndpoint } from './bucket-store.ts';
import { FolderStore } from './folder-store.ts';
import type { RecordingStore } from './store.ts';

/**
 * The store, and what to close with it. The bucket is the operator's own (not a customer's
 * address), so its client may reach private addresses (a MinIO beside the platform); it is still
 * our outbound client: no redirects, bounded waits, one attempt a call.
 */
export function recordingStoreFromConfig(config: Config): { store: RecordingStore; close: () => Promise<void> } {
  if (!config.VD_RECORDINGS_BUCKET) {
    if (config.VD_DATA_DIR !== 'memory://') return { store: new FolderStore(join(config.VD_DATA_DIR, 'recordings')), close: async () => {} };
    // An in-memory store (tests): its recordings in a temporary folder that goes with it.
    const dir = mkdtempSync(join(tmpdir(), 'vd-recordings-'));
    return { store: new FolderStore(dir), close: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const spool = config.VD_DATA_DIR === 'memory://' ? join(tmpdir(), 'vd-recordings-spool') : join(config.VD_DATA_DIR, 'recordings-spool');
  const client = new OutboundClient({ allowPrivate: true, timeoutMs: 30_000, connectionsPerOrigin: 128 });
  const store = new BucketStore(
    {
      endpoint: config.VD_RECORDINGS_ENDPOINT ?? defaultEndpoint(config.VD_RECORDINGS_REGION),
      bucket: config.VD_RECORDINGS_BUCKET,
      region: config.VD_RECORDINGS_REGION,
      accessKey: config.VD_RECORDINGS_ACCESS_KEY!,
      secretKey: config.VD_RECORDINGS_SECRET_KEY!,
    },
    client,
    spool,
  );
  return { store, close: () => client.close() };
}
