/** The recording store's settings: a bucket needs both keys; the upload limit at its edges; the store chosen. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { recordingStoreFromConfig } from './from-config.ts';
import { ConfigError, loadConfig } from '../config.ts';

const t = suite('recording settings');
const base = { NODE_ENV: 'test', VD_DATA_DIR: 'memory://' };

t('a bucket without both keys stops the start, naming them', () => {
  for (const extra of [{}, { VD_RECORDINGS_ACCESS_KEY: 'ak' }, { VD_RECORDINGS_SECRET_KEY: 'sk' }]) {
    try {
      loadConfig({ ...base, VD_RECORDINGS_BUCKET: 'recs', ...extra });
      assert.unreachable('started without keys');
    } catch (err) {
      assert.instance(err, ConfigError);
      assert.match((err as Error).message, /VD_RECORDINGS_ACCESS_KEY, VD_RECORDINGS_SECRET_KEY: both are required with VD_RECORDINGS_BUCKET/);
    }
  }
});

t('VD_RECORDING_MAX_MB: 1 and 500 taken, 0 and 501 refused; 100 by default', () => {
  assert.is(loadConfig(base).VD_RECORDING_MAX_MB, 100);
  for (const ok of ['1', '500']) assert.is(loadConfig({ ...base, VD_RECORDING_MAX_MB: ok }).VD_RECORDING_MAX_MB, Number(ok));
  for (const bad of ['0', '501', '1.5', 'many']) assert.throws(() => loadConfig({ ...base, VD_RECORDING_MAX_MB: bad }), /VD_RECORDING_MAX_MB/);
  assert.throws(() => loadConfig({ ...base, VD_RECORDINGS_ENDPOINT: 'ftp://example.com' }), /VD_RECORDINGS_ENDPOINT/);
});

t('the store the settings name: the folder by default, the bucket (AWS endpoint of the region by default) when given', async () => {
  const folder = recordingStoreFromConfig(loadConfig(base));
  assert.is(folder.store.kind, 'folder');
  await folder.close();
  const bucket = recordingStoreFromConfig(loadConfig({ ...base, VD_RECORDINGS_BUCKET: 'recs', VD_RECORDINGS_REGION: 'eu-west-1', VD_RECORDINGS_ACCESS_KEY: 'ak', VD_RECORDINGS_SECRET_KEY: 'sk' }));
  assert.is(bucket.store.kind, 'bucket');
  const { BucketStore } = await import('./bucket-store.ts');
  assert.ok(bucket.store instanceof BucketStore);
  assert.is((bucket.store as InstanceType<typeof BucketStore>).bucket.url('t/r.wav'), 'https://s3.eu-west-1.amazonaws.com/recs/t/r.wav');
  await bucket.close();
});

t.run();
