/** The little of s3rver (no types of its own) that test/support/s3rver-child.ts uses. */
declare module 's3rver' {
  export default class S3rver {
    constructor(opts: { address: string; port: number; directory: string; silent: boolean; configureBuckets: Array<{ name: string }> });
    run(): Promise<unknown>;
    close(): Promise<void>;
  }
}
