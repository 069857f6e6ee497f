/** The recording store the settings name: a bucket when VD_RECORDINGS_BUCKET is set, else the folder. */
import { join } from 'node:path';
import type { Config } from '../../shared/config.ts';
import { OutboundClient } from '../integrations/guarded-client.ts';
import { BucketStore, defaultEndpoint } from './bucket-store.ts';
import { FolderStore } from './folder-store.ts';
import type { RecordingStore } from './store.ts';

/**
 * The store, and what to close with it. The bucket is the operator's own (not a customer's
 * address), so its client may reach private addresses (a MinIO beside the platform); it is still
 * our outbound client: no redirects, bounded waits, one attempt a call.
 */
export function recordingStoreFromConfig(config: Config): { store: RecordingStore; close: () => Promise<void> } {
  if (!config.VD_RECORDINGS_BUCKET) return { store: new FolderStore(join(config.VD_DATA_DIR, 'recordings')), close: async () => {} };
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
    join(config.VD_DATA_DIR, 'recordings-spool'),
  );
  return { store, close: () => client.close() };
}
