/**
 * The import direction of ARCHITECTURE.md, enforced by dependency-cruiser in `npm test`
 * (`npm run deps`): `shared` ← `control-plane` ← `dialer`, `http`; `media-agent` imports only
 * `shared`; the composition roots (`control-plane/main.ts`, `control-plane/server.ts`) may import
 * everything. Inside control-plane, the actor machines are pure and `context.ts` (which builds
 * every service) is imported by no domain module. No import cycles at all. Tests and benchmarks
 * may import anything.
 */
const ROOTS = '^control-plane/(main|server)\\.ts$';

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'Modules must not import each other in a loop, types included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'shared-stands-alone',
      comment: 'shared/ is code every part uses; it imports none of them.',
      severity: 'error',
      from: { path: '^shared/' },
      to: { path: '^(control-plane|dialer|http|media-agent)/' },
    },
    {
      name: 'media-agent-imports-only-shared',
      comment: 'The media agent is a deployable of its own; the wire protocol types live in shared/.',
      severity: 'error',
      from: { path: '^media-agent/' },
      to: { path: '^(control-plane|dialer|http)/' },
    },
    {
      name: 'control-plane-below-dialer-and-http',
      comment: 'control-plane/ is below dialer/ and http/; only the composition roots put them together.',
      severity: 'error',
      from: { path: '^control-plane/', pathNot: ROOTS },
      to: { path: '^(dialer|http|media-agent)/' },
    },
    {
      name: 'dialer-below-http',
      comment: 'The dialer does not know the HTTP layer (http/ may call the dialer it is given).',
      severity: 'error',
      from: { path: '^dialer/' },
      to: { path: '^http/' },
    },
    {
      name: 'machines-are-pure',
      comment: 'Actor machines (control-plane/**/*.machine.ts, each beside its actor) import only shared/, each other and store types.',
      severity: 'error',
      from: { path: '^control-plane/.+\\.machine\\.ts$' },
      to: { path: '^control-plane/', pathNot: '^control-plane/(.+\\.machine\\.ts$|infra/db/schema/)' },
    },
    {
      name: 'context-is-a-root',
      comment: 'context.ts builds every service; a domain module takes the services it uses instead of importing it.',
      severity: 'error',
      from: { path: '^control-plane/', pathNot: `${ROOTS}|^control-plane/context\\.ts$` },
      to: { path: '^control-plane/context\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(test|bench)/' },
    // TypeScript 7 has no JS API for dependency-cruiser yet; swc reads the sources (type-only
    // imports included) instead.
    parser: 'swc',
    tsPreCompilationDeps: true,
    includeOnly: '^(control-plane|dialer|http|media-agent|shared)/',
  },
};
