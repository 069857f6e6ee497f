/**
 * Source addresses of recording imports follow the webhook address rules (spec, Recording import
 * rules 4): every refused form of the shared table is refused when an index address or a bucket
 * endpoint is saved, with the reason; and when a source is called, a name that resolved to a
 * public address when saved but resolves to loopback now (DNS rebinding) is refused by the
 * guarded client before a byte reaches the local server behind it.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { OutboundClient } from '../../control-plane/infra/outbound-http/guarded-client.ts';
import { checkedSettings } from '../../control-plane/imports/recordings/settings.ts';
import { testImportSource } from '../../control-plane/imports/recordings/sources.ts';
import { DomainError } from '../../shared/errors.ts';
import { refusedForms } from '../support/refused-addresses.ts';
import { startWebSource, type WebSource } from '../support/recording-sources.ts';

const t = suite('recording imports: source addresses');
let web: WebSource;
let port: number;

t.before(async () => {
  web = await startWebSource();
  web.json('/index.json', { items: [] });
  port = Number(new URL(web.url).port);
});

t.after(async () => {
  await web?.close();
});

async function refusal(input: Parameters<typeof checkedSettings>[1]): Promise<DomainError> {
  try {
    await checkedSettings(null, input, { allowPrivate: false, lookup: async () => [{ address: '93.184.216.34', family: 4 }] });
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error(`accepted: ${JSON.stringify(input)}`);
}

t('every refused form is refused when saved, as an index address and as a bucket endpoint', async () => {
  for (const [form, why] of refusedForms(port)) {
    const a = await refusal({ source: 'web_index', index_url: form });
    assert.is(a.code, 'unprocessable', form);
    assert.match(a.message, /^index_url: /, form);
    assert.match(a.message, why, form);
    const b = await refusal({ source: 'bucket', bucket: 'calls', endpoint: form, access_key: 'a', secret_key: 's' });
    assert.match(b.message, /^endpoint: /, form);
    assert.match(b.message, why, form);
  }
  // A public name that resolves to a private address now is refused too.
  const rebound = await checkedSettings(null, { source: 'web_index', index_url: 'https://index.example.com/i.json' }, { allowPrivate: false, lookup: async () => [{ address: '93.184.216.34', family: 4 }] });
  assert.is(rebound.index_url, 'https://index.example.com/i.json');
  try {
    await checkedSettings(null, { source: 'web_index', index_url: 'https://index.example.com/i.json' }, { allowPrivate: false, lookup: async () => [{ address: '10.1.2.3', family: 4 }] });
    assert.unreachable('a name resolving to a private address is accepted');
  } catch (err) {
    assert.instance(err, DomainError);
    assert.match((err as DomainError).message, 'private or internal');
  }
});

t('when called: a name now resolving to loopback is refused before anything is sent', async () => {
  const client = new OutboundClient({ allowPrivate: false, lookup: async () => [{ address: '127.0.0.1', family: 4 }] });
  try {
    const settings = await checkedSettings(null, { source: 'web_index', index_url: `http://index.example.com:${port}/index.json` }, { allowPrivate: false, lookup: async () => [{ address: '93.184.216.34', family: 4 }] });
    const r = await testImportSource(client, settings);
    assert.is(r.ok, false);
    assert.match(r.message, 'address refused');
    const bucket = await checkedSettings(null, { source: 'bucket', bucket: 'calls', endpoint: `http://s3.example.com:${port}`, access_key: 'a', secret_key: 's' }, { allowPrivate: false, lookup: async () => [{ address: '93.184.216.34', family: 4 }] });
    const rb = await testImportSource(client, bucket);
    assert.is(rb.ok, false);
    assert.match(rb.message, 'address refused');
    assert.is(web.requests.length, 0, 'nothing reached the local server');
  } finally {
    await client.close();
  }
});

t.run();
