/**
 * The import direction of ARCHITECTURE.md, enforced by dependency-cruiser in `npm test`
 * (`npm run deps`): `shared` ← `control-plane` ← `dialer`, `http`; `media-agent` imports only
 * `shared`; the composition roots (`control-plane/main.ts`, `control-plane/server.ts`) may import
 * everything. Inside control-plane, the actor machines are pure and `context.ts` (which builds
 * every service) is imported by no domain module. No import cycles at all. Tests and benchmarks
 * may import anything. Rooms, infrastructure and http keep to the rules after PORTS below; no
 * folder cycles (rooms, infrastructure parts, top folders) is checked by
 * test/shared/import-direction.test.ts from this tool's graph.
 */
const ROOTS = '^control-plane/(main|server)\\.ts$';

/**
 * The rooms of control-plane/: every folder under it except infra/ is a domain room (ai, auth,
 * billing, companies, compliance, console, core, imports, platform-controls, qa, recordings,
 * service-checks, telephony, usage, webhooks); control-plane/infra/<part>/ is infrastructure
 * (db, coordination, runtime, idempotency, instances, outbound-http); the files at the top of
 * control-plane/ are the composition roots (context.ts, main.ts, server.ts), the process's
 * configuration read from the environment (config.ts) and the metrics registry (metrics.ts,
 * metrics-server.ts: prom-client only, below every room).
 *
 * A room's named ports: the only modules of a room that another room may import, each with the
 * reason it is shared. Every other module of a room is private to it. A new cross-room import
 * either uses a port listed here or adds one, with its reason, in review.
 */
const PORTS = {
  'ai/providers.ts': 'the configured AI upstreams, which the QA Bot and the service checks use',
  'ai/health.ts': 'probing each upstream, for the service checks',
  'ai/probe.ts': "the probe's time limit, for the service checks",
  'auth/accounts.ts': "a user's sign-in row, made with a company and its users",
  'auth/api-keys.ts': "revoking a company's keys when it is suspended, edited or closed",
  'auth/passwords.ts': 'hashing the temporary password of a new user',
  'auth/sessions.ts': "ending a company's sessions when it is suspended or a user is disabled",
  'core/lead.ts': "one lead's fields and rules, which the legacy lead files follow as the JSON API does",
  'companies/plans.ts': "a company's plan caps, which campaigns obey",
  'compliance/calling-window.ts': "the callee's calling window, which campaigns and people use",
  'compliance/legal-rules.ts': 'the legal dialing rules, which campaign settings and people obey',
  'compliance/callee-zone-ids.ts': "a callee's zone, set by the list check",
  'compliance/callee-zones.ts': "the zones of a number's region, for the list check",
  'compliance/dnc.ts': "the do-not-call list, which a company's outcomes add to",
  'imports/recordings/settings.ts': "a recording import connection's settings, made with the connection",
  'imports/recordings/sources.ts': "checking a recording import connection's source when it is made or tested",
  'platform-controls/kill-switch.ts': 'the kill switch state, shown on a company',
  'recordings/bucket-store.ts': 'the S3-compatible store a recording import reads from',
  'recordings/read.ts': 'reading a stored recording, for the console',
  'recordings/save.ts': 'saving a recording, for the recording imports',
  'recordings/store.ts': 'the recording store port and its errors',
  'telephony/agent-hub.ts': 'the agents connected to this instance (AI bot sessions, recording reports)',
  'usage/ledger.ts': "a company's monthly usage, for billing and the company view",
  'usage/meter.ts': 'recording usage (calls, AI minutes, checks) as it happens',
};
const portPaths = Object.keys(PORTS).map((p) => p.replace(/[.]/g, '\\.')).join('|');
const ROOM_PORT = `^control-plane/(${portPaths})$`;

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
    {
      name: 'rooms-meet-through-ports',
      comment:
        'A domain room (control-plane/<room>/, not infra/) imports infrastructure, shared/ and its own modules; another room only through one of its named ports (PORTS above, each with its reason).',
      severity: 'error',
      from: { path: '^control-plane/(?!infra/)([^/]+)/' },
      to: { path: '^control-plane/(?!infra/)[^/]+/', pathNot: ['^control-plane/$1/', ROOM_PORT] },
    },
    {
      name: 'infra-below-rooms',
      comment: 'Infrastructure (control-plane/infra/) imports only infrastructure, shared/ and the metrics registry; never a domain room or a composition root. What it needs of a room is given to it (a function or a type it declares).',
      severity: 'error',
      from: { path: '^control-plane/infra/' },
      to: { path: '^control-plane/', pathNot: '^control-plane/(infra/|metrics\\.ts$)' },
    },
    {
      name: 'http-never-imports-the-store',
      comment: 'http/ reaches the store only through control-plane modules; it names its type as http/env.ts Store.',
      severity: 'error',
      from: { path: '^http/' },
      to: { path: '^control-plane/infra/db/' },
    },
    {
      name: 'http-uses-infra-through-few-doors',
      comment:
        "http/ imports no infrastructure (infra/db has its own rule above) but: infra/idempotency/records.ts (the records of the API's own Idempotency-Key, which its middleware keeps), infra/instances/instances.ts (the instance-to-instance path the peer route serves) and infra/runtime/outbox.ts (which events are operators' only, for the console's words).",
      severity: 'error',
      from: { path: '^http/' },
      to: { path: '^control-plane/infra/', pathNot: ['^control-plane/infra/db/', '^control-plane/infra/(idempotency/records|instances/instances|runtime/outbox)\\.ts$'] },
    },
    {
      name: 'console-imports-no-route',
      comment: 'The console (http/console/) and the API routes (http/routes/) share request bodies through http/schemas/ and request glue through http/common/, never a route module.',
      severity: 'error',
      from: { path: '^http/console/' },
      to: { path: '^http/routes/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Tests (in test/, and the pure ones beside the code) and benchmarks may import anything.
    exclude: { path: ['^(test|bench)/', '\\.test\\.ts$'] },
    // TypeScript 7 has no JS API for dependency-cruiser yet; swc reads the sources (type-only
    // imports included) instead.
    parser: 'swc',
    tsPreCompilationDeps: true,
    includeOnly: '^(control-plane|dialer|http|media-agent|shared)/',
  },
};
