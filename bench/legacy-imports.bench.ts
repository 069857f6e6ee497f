/**
 * The legacy imports under load, the control plane in a process of its own on a fresh Postgres
 * database (so its memory is its own):
 *
 * - `legacy_import.leads`: a 200,000-row legacy list download (tab, CRLF, a header, ~40 MB)
 *   posted to import-leads, until the answer and until its list check is done (goal: stored and
 *   checked within 3 s); and `legacy_import.copy_floor`: the same rows, already normalised, loaded
 *   by a bare COPY into a table of the same shape as people (its indexes and constraints), with
 *   the import's ratio to it (goal: at most 3×).
 * - `legacy_import.leads_pglite`: the same file on the embedded store (PGlite), in this process.
 * - `legacy_import.dnc`: a 1,000,000-line do-not-call file (goal: within 3 s); and
 *   `legacy_import.dnc_floors`: in the same run, the numbers' validation alone (one core) and a bare
 *   COPY of them into a table shaped like dnc_numbers, with the import's ratio to each.
 * - `legacy_import.memory` (first, on the fresh instance after a small warm-up import): its
 *   resident memory while a 50 MB lead file streams in, sampled every 10 ms from /proc, against
 *   its idle size (goal: under 150 MB more), and until that file's list check is done.
 *
 * Medians over BENCH_RUNS (default 3) runs after one warm-up, each with numbers of its own.
 *
 * Usage: node bench/legacy-imports.bench.ts   (BENCH_ONLY=memory,leads,dnc,pglite runs some parts)
 */
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from '../test/support/db.ts';
import { startTestServer } from '../test/support/server.ts';
import { makeCompany } from '../test/support/fixtures.ts';
import { call, type Session } from '../test/support/http.ts';
import { legacyFile, legacyRow, usNumber } from '../test/support/legacy-files.ts';
import { deleteRedisPrefix, startControlPlaneProcess, stopProcess } from '../test/support/processes.ts';
import { newIds } from '../shared/ids.ts';
import { toE164 } from '../shared/phone.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const ROWS = 200_000;
const DNC_LINES = 1_000_000;
const GOAL_MS = 3000;
const CONNECTORS = '/api/integrations/v1/connectors';
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null;
const part = (name: string) => !ONLY || ONLY.has(name);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const stats = (xs: number[]) => ({ median_ms: Math.round(median(xs)), min_ms: Math.round(Math.min(...xs)), max_ms: Math.round(Math.max(...xs)) });

/** A legacy list download of `rows` rows with numbers from `from`, about 200 bytes a row. */
function leadDownload(rows: number, from: number, comment = 'no answer!Ncall back after 5pm'): Buffer {
  return Buffer.from(legacyFile(Array.from({ length: rows }, (_, i) => legacyRow(from + i, { comments: comment, address1: '', security_phrase: '', vendor_lead_code: '' }))));
}

/** Milliseconds a bare COPY of `text` (`statement`, from stdin) takes on a connection of `pool`. */
async function timedCopy(pool: pg.Pool, statement: string, text: string): Promise<number> {
  const client = await pool.connect();
  try {
    const started = performance.now();
    const stream = client.query(copyFrom(statement));
    for (let at = 0; at < text.length; at += 256 * 1024) if (!stream.write(text.slice(at, at + 256 * 1024))) await once(stream, 'drain');
    stream.end();
    await once(stream, 'finish');
    return performance.now() - started;
  } finally {
    client.release();
  }
}

async function waitCheck(sql: pg.Pool, id: string): Promise<void> {
  for (;;) {
    const r = await sql.query('select status from list_checks where id = $1', [id]);
    if (r.rows[0]?.status === 'done') return;
    if (r.rows[0]?.status === 'failed') throw new Error(`check ${id} failed`);
    await new Promise((res) => setTimeout(res, 5));
  }
}

async function setup(url: string, session: Session) {
  const list = async (name: string) => (await call(url, 'POST', '/api/core/v1/lists', { session, body: { name } })).body.id as string;
  const con = (await call(url, 'POST', CONNECTORS, { session, body: { kind: 'legacy', name: 'Bench' } })).body.id as string;
  return { list, con };
}

/** Imports `file` into a new list; the time to the answer and to the end of the list check. */
async function importOnce(url: string, session: Session, waitDone: (id: string) => Promise<void>, file: Buffer, rows: number) {
  const { list, con } = await setup(url, session);
  const listId = await list('Bench');
  const started = performance.now();
  const r = await call(url, 'POST', `${CONNECTORS}/${con}/legacy/import-leads?list_id=${listId}`, { session, raw: file, headers: { 'content-type': 'text/csv' } });
  const answered = performance.now();
  if (r.status !== 200 || r.body.core.created !== rows) throw new Error(`import: ${r.status} ${r.text.slice(0, 300)}`);
  await waitDone(r.body.core.check_id);
  return { request: answered - started, checked: performance.now() - started, check_id: r.body.core.check_id as string };
}

const db = await createTestDatabase();
const prefix = testRedisPrefix();
const sql = new pg.Pool({ connectionString: db.url, max: 2 });
let child: Awaited<ReturnType<typeof startControlPlaneProcess>> | undefined;
try {
  // The company and its owner are made by an instance in this process, which then stops; the
  // measured instance is a process of its own on the same database.
  const setupCp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  const co = await makeCompany(setupCp, 'Bench Legacy');
  await setupCp.close();
  child = await startControlPlaneProcess({ DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, VD_REDIS_KEY_PREFIX: prefix, VD_RATE_LIMIT_PER_SECOND: '1000000', VD_RATE_LIMIT_BURST: '1000000', ...(process.env.BENCH_CHILD_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_CHILD_NODE_OPTIONS } : {}) });
  const url = child.url;
  const owner = co.owner;
  const pid = child.proc.pid!;

  // Memory first, on the fresh instance: a 50 MB lead file (190,000 rows with longer comments) streaming in.
  if (part('memory')) {
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
    const big = leadDownload(190_000, 6_000_000, 'x'.repeat(70));
    if (big.length > 50 * 1024 * 1024) throw new Error(`the memory file is ${big.length} bytes, over 50 MB`);
    // Warmed up by a small import first, so that the idle size includes the code an import runs.
    const warm = await setup(url, owner);
    const warmList = await warm.list('Warm-up');
    await call(url, 'POST', `${CONNECTORS}/${warm.con}/legacy/import-leads?list_id=${warmList}`, { session: owner, raw: leadDownload(1000, 7_900_000), headers: { 'content-type': 'text/csv' } });
    await new Promise((res) => setTimeout(res, 2000));
    const idle = rss();
    let peak = idle;
    let peakUpload = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 10);
    try {
      const { con: mcon, list } = await setup(url, owner);
      const listId = await list('Memory');
      const r = await call(url, 'POST', `${CONNECTORS}/${mcon}/legacy/import-leads?list_id=${listId}`, { session: owner, raw: big, headers: { 'content-type': 'text/csv' } });
      peakUpload = Math.max(peak, rss());
      if (r.status !== 200) throw new Error(`memory import: ${r.status} ${r.text.slice(0, 300)}`);
      await waitCheck(sql, r.body.core.check_id);
    } finally {
      clearInterval(sampler);
    }
    console.log(JSON.stringify({
      bench: 'legacy_import.memory', bytes: big.length, idle_rss_mb: Math.round(idle),
      upload: { peak_rss_mb: Math.round(peakUpload), growth_mb: Math.round(peakUpload - idle) },
      until_checked: { peak_rss_mb: Math.round(peak), growth_mb: Math.round(peak - idle) },
      goal_growth_mb: 150, met: peakUpload - idle < 150,
    }));
  }

  // Leads: 200,000 rows, against a bare COPY of the same rows into a table shaped like people.
  if (part('leads')) {
    const leadRuns: Array<{ request: number; checked: number }> = [];
    let bytes = 0;
    for (let run = 0; run <= RUNS; run++) {
      const file = leadDownload(ROWS, run * ROWS);
      bytes = file.length;
      const r = await importOnce(url, owner, (id) => waitCheck(sql, id), file, ROWS);
      const c = (await sql.query(`select extract(epoch from started_at - created_at) * 1000 as queued_ms, extract(epoch from finished_at - started_at) * 1000 as running_ms from list_checks where id = $1`, [r.check_id])).rows[0];
      console.error(JSON.stringify({ bench: 'legacy_import.leads.run', run, answer_ms: Math.round(r.request), checked_ms: Math.round(r.checked), check_queued_ms: Math.round(c.queued_ms), check_running_ms: Math.round(c.running_ms) }));
      if (run > 0) leadRuns.push(r);
    }
    await sql.query('create table people_floor (like people including all)');
    const floors: number[] = [];
    for (let run = 0; run <= RUNS; run++) {
      const ids = newIds('per', ROWS);
      const lines: string[] = [];
      for (let i = 0; i < ROWS; i++) {
        lines.push([ids[i], co.tenantId, `lst_floor${run}`, String(1000 + i), `+1${usNumber(run * ROWS + i)}`, 'Ada', 'Lovelace', 'CA', '94107', 'ada@example.com', '1980-02-03'].join('\t'));
      }
      const ms = await timedCopy(sql, 'copy people_floor (id, tenant_id, list_id, lead_id, phone_number, first_name, last_name, state, postal_code, email, date_of_birth) from stdin', lines.join('\n') + '\n');
      if (run > 0) floors.push(ms);
    }
    const lead = { request: stats(leadRuns.map((r) => r.request)), checked: stats(leadRuns.map((r) => r.checked)) };
    const floor = stats(floors);
    console.log(JSON.stringify({ bench: 'legacy_import.leads', rows: ROWS, bytes, runs: RUNS, answer: lead.request, stored_and_checked: lead.checked, goal_ms: GOAL_MS, met: lead.checked.median_ms <= GOAL_MS }));
    console.log(JSON.stringify({
      bench: 'legacy_import.copy_floor', rows: ROWS, runs: RUNS, ...floor,
      ratio_answer: +(lead.request.median_ms / floor.median_ms).toFixed(1),
      ratio_checked: +(lead.checked.median_ms / floor.median_ms).toFixed(1),
      goal_ratio: 3, met: lead.checked.median_ms / floor.median_ms <= 3,
    }));
  }

  // Do-not-call: 1,000,000 lines of distinct numbers.
  if (part('dnc')) {
    const dncRuns: number[] = [];
    const { con } = await setup(url, owner);
    for (let run = 0; run <= RUNS; run++) {
      const body = Buffer.from(Array.from({ length: DNC_LINES }, (_, i) => usNumber(((run + 1) * DNC_LINES + i) % 8_000_000)).join('\n') + '\n');
      const started = performance.now();
      const r = await call(url, 'POST', `${CONNECTORS}/${con}/legacy/import-dnc`, { session: owner, raw: body, headers: { 'content-type': 'text/plain' } });
      if (r.status !== 200 || r.body.accepted !== DNC_LINES) throw new Error(`dnc: ${r.status} ${r.text.slice(0, 300)}`);
      if (run > 0) dncRuns.push(performance.now() - started);
    }
    const dnc = stats(dncRuns);
    console.log(JSON.stringify({ bench: 'legacy_import.dnc', lines: DNC_LINES, runs: RUNS, ...dnc, goal_ms: GOAL_MS, met: dnc.median_ms <= GOAL_MS }));
    // Two floors in the same run: the numbers' validation alone (libphonenumber's full metadata,
    // one core, in this process), and the same numbers, already E.164, by a bare COPY into a
    // table shaped like dnc_numbers (its primary key, no trigger).
    const raw = Array.from({ length: DNC_LINES }, (_, i) => usNumber((7 * DNC_LINES + i) % 8_000_000));
    const validations: number[] = [];
    for (let run = 0; run <= RUNS; run++) {
      const started = performance.now();
      for (const n of raw) if (!toE164(n)) throw new Error(`invalid ${n}`);
      if (run > 0) validations.push(performance.now() - started);
    }
    await sql.query('create table dnc_floor (like dnc_numbers including all)');
    const copies: number[] = [];
    for (let run = 0; run <= RUNS; run++) {
      const ms = await timedCopy(sql, 'copy dnc_floor (tenant_id, number, source) from stdin', raw.map((n) => `${co.tenantId}\t+1${n}-${run}\tlegacy_import`).join('\n') + '\n');
      if (run > 0) copies.push(ms);
    }
    const validation = stats(validations);
    const copy = stats(copies);
    console.log(JSON.stringify({
      bench: 'legacy_import.dnc_floors', lines: DNC_LINES, runs: RUNS, validation_one_core: validation, copy_floor: copy,
      ratio_to_copy: +(dnc.median_ms / copy.median_ms).toFixed(1), ratio_to_validation: +(dnc.median_ms / validation.median_ms).toFixed(1),
    }));
  }

  await stopProcess(child.proc);
  child = undefined;

  // The embedded store: the same 200,000 rows on PGlite, in this process.
  if (part('pglite')) {
    const ecp = await startTestServer({ embedded: true });
    try {
      const eco = await makeCompany(ecp, 'Bench Embedded');
      const checkDone = async (id: string) => {
        for (;;) {
          const c = await ecp.services.store.db.selectFrom('list_checks').select('status').where('id', '=', id).executeTakeFirstOrThrow();
          if (c.status === 'done') return;
          await new Promise((res) => setTimeout(res, 5));
        }
      };
      const runs: Array<{ request: number; checked: number }> = [];
      const pgliteRuns = Math.max(1, Math.min(RUNS, 2));
      for (let run = 0; run < pgliteRuns; run++) runs.push(await importOnce(ecp.url, eco.owner, checkDone, leadDownload(ROWS, (run + 7) * ROWS % 8_000_000), ROWS));
      console.log(JSON.stringify({ bench: 'legacy_import.leads_pglite', rows: ROWS, runs: pgliteRuns, answer: stats(runs.map((r) => r.request)), stored_and_checked: stats(runs.map((r) => r.checked)) }));
    } finally {
      await ecp.close();
    }
  }
} finally {
  await stopProcess(child?.proc);
  await sql.end();
  await db.drop();
  await deleteRedisPrefix(prefix);
}
