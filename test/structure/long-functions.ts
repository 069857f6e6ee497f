/**
 * The functions allowed over the size limit (100 lines), each with its reason; see `sizes.ts`.
 * Keyed `path#name` as `sizes.ts` names functions. The structure test fails for an entry that no
 * longer names a function over the limit, so an entry goes when its function is split.
 */
import type { AllowList } from './sizes.ts';

/**
 * A suite container is a function whose body registers one suite's tests on a uvu suite, so that
 * the same tests run against two implementations (Postgres and the embedded store, Redis and the
 * in-process coordinator, a folder and a bucket) with shared fixtures in its closure. Each test
 * case is its own arrow and is held to the limit on its own; splitting the container would only
 * pass the closure's fixtures around.
 */
const SUITE_CONTAINER = 'suite container: registers the tests of one suite run against two implementations; each test is its own arrow under the limit';

export const LONG_FUNCTIONS: AllowList = {
  'test/http/billing-suite.ts#billingSuite': `${SUITE_CONTAINER} (Postgres and the embedded store)`,
  'test/control-plane/coordinator.test.ts#contract': `${SUITE_CONTAINER} (Redis and the in-process coordinator)`,
  'test/recordings/store.test.ts#contract': `${SUITE_CONTAINER} (folder and bucket stores)`,
  'control-plane/infra/db/migrations/20261121_0001_foundation.ts#up':
    'a migration is one schema change written once and never edited: the foundation creates the first tables in one transaction, table after table',
};

/**
 * Files over 500 lines allowed for now, each with its reason. Issue 29 is done only when this is
 * empty; entries here are splits under way elsewhere, and fail the test once the file is split.
 */
export const LONG_FILES: AllowList = {};
