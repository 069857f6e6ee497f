/**
 * s3rver in a process of its own (test/support/s3.ts starts it): on Node 24 its paginated
 * listings need `--openssl-legacy-provider`, which only this process gets. Prints `{"port":N}`
 * once it listens. Arguments: the folder its files live in, the port (0: any), bucket names.
 */
import S3rver from 's3rver';

const [dir, port, ...buckets] = process.argv.slice(2);
const server = new S3rver({ address: '127.0.0.1', port: Number(port), directory: dir, silent: true, configureBuckets: buckets.map((name) => ({ name })) });
const address = (await server.run()) as { port: number };
process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
process.on('SIGTERM', () => {
  void server.close().finally(() => process.exit(0));
});
