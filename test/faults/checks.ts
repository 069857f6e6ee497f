/**
 * The fault suite's checks, run once the faults have stopped and the platform has settled. Each
 * reads the store (and Redis, the receiver's log, the agents' taps) and answers a result with its
 * figures; `ok` is a hard assertion. Nothing here is loosened to make a run pass: a failed check
 * names what it saw, with examples, so the bug behind it can be found.
 */
import type pg from 'pg';
import type { Redis } from 'ioredis';

export type CheckResult = { check: string; ok: boolean; figures: Record<string, number | string | null>; examples?: unknown[] };

/** What the agents' trunks did, from their tap files. */
export type TrunkCall = { call: string; node: string; to: string; up: number; down: number | null; reason: string | null; life: number };
export type Taps = { calls: Map<string, TrunkCall>; duplicateOriginates: number };

/** One request the receiver took: which connection (path), delivery and event. */
export type Receipt = { path: string; delivery: string; event: string; at: number };

/** Reads the tap files: a call's end is its `e` line, else the death of the agent process that carried it. */
export function readTaps(files: Array<{ node: string; text: string; lives: Array<{ started: number; ended: number | null }> }>): Taps {
  const calls = new Map<string, TrunkCall>();
  let duplicateOriginates = 0;
  for (const f of files) {
    let life = -1;
    const open = new Set<string>();
    const closeLife = () => {
      const ended = f.lives[life]?.ended ?? null;
      for (const id of open) {
        const c = calls.get(id)!;
        c.down = ended;
        c.reason = ended === null ? null : 'agent_died';
      }
      open.clear();
    };
    for (const line of f.text.split('\n')) {
      if (!line) continue;
      const [kind, at, id, extra] = line.split(' ');
      if (kind === 's') {
        if (life >= 0) closeLife();
        life++;
      } else if (kind === 'o') {
        if (calls.has(id)) {
          duplicateOriginates++;
          continue;
        }
        calls.set(id, { call: id, node: f.node, to: extra, up: Number(at), down: null, reason: null, life });
        open.add(id);
      } else if (kind === 'e') {
        const c = calls.get(id);
        if (c && open.has(id)) {
          c.down = Number(at);
          c.reason = extra;
          open.delete(id);
        }
      }
    }
    if (life >= 0) closeLife();
  }
  return { calls, duplicateOriginates };
}

type CallRow = { id: string; tenant_id: string; campaign_id: string | null; person_id: string | null; state: string; end_reason: string | null; node_id: string | null; launched_by: string | null; started_at: Date };

export type CheckInput = {
  db: pg.Client;
  redis: Redis;
  redisPrefix: string;
  taps: Taps;
  receipts: Receipt[];
  /** Delivery ids the receiver saw while another request for the same id was being answered. */
  overlaps: string[];
  /** Connection id → the receiver path it posts to. */
  connectors: Map<string, string>;
  /** Instance ids running now. */
  liveInstances: Set<string>;
  campaigns: string[];
  /** When the faults stopped and every pause was lifted, and when the final pause was put. */
  recovery: { from: number; to: number };
  /** The fail-closed bound of the kill switch (2 s). */
  pauseBoundMs: number;
  crashes: Array<{ what: string; how: string; at: number }>;
};

export async function runChecks(input: CheckInput): Promise<CheckResult[]> {
  const calls = (await input.db.query<CallRow>('select id, tenant_id, campaign_id, person_id, state, end_reason, node_id, launched_by, started_at from calls')).rows;
  const byId = new Map(calls.map((c) => [c.id, c]));
  return [
    await personOverlap(input, byId),
    await everyCallEnded(input, byId),
    await usageOnce(input),
    await eventsDelivered(input),
    await noLaunchWhilePaused(input, byId),
    await noActorLost(input, byId),
    processes(input),
  ];
}

/** No person ever had two calls up at once: in the calls table, and at the trunks. */
async function personOverlap(input: CheckInput, byId: Map<string, CallRow>): Promise<CheckResult> {
  const db = await input.db.query<{ a: string; b: string; person_id: string; a_start: Date; a_end: Date | null; b_start: Date; b_end: Date | null }>(`
    select a.id as a, b.id as b, a.person_id, a.started_at as a_start, a.ended_at as a_end, b.started_at as b_start, b.ended_at as b_end
    from calls a join calls b on a.person_id = b.person_id and a.id < b.id
    where a.person_id is not null
      and a.started_at < coalesce(b.ended_at, 'infinity') and b.started_at < coalesce(a.ended_at, 'infinity')`);
  const people = await input.db.query<{ n: number; calls: number }>(`select count(distinct person_id)::int as n, count(*)::int as calls from calls where person_id is not null`);
  // At the trunks: each call from its originate to its end (or its agent's death).
  const byPerson = new Map<string, TrunkCall[]>();
  for (const c of input.taps.calls.values()) {
    const p = byId.get(c.call)?.person_id;
    if (!p) continue;
    let l = byPerson.get(p);
    if (!l) byPerson.set(p, (l = []));
    l.push(c);
  }
  const trunk: unknown[] = [];
  for (const [person, list] of byPerson) {
    list.sort((x, y) => x.up - y.up);
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1];
      if ((prev.down ?? Infinity) > list[i].up) trunk.push({ person, first: prev, second: list[i] });
    }
  }
  return {
    check: 'person_overlap',
    ok: db.rows.length === 0 && trunk.length === 0,
    figures: { people_called: people.rows[0].n, call_rows: people.rows[0].calls, trunk_calls: input.taps.calls.size, overlaps_in_store: db.rows.length, overlaps_at_trunks: trunk.length, duplicate_originates: input.taps.duplicateOriginates },
    examples: [...db.rows.slice(0, 5), ...trunk.slice(0, 5)],
  };
}

/** Every call row ended once the platform settled (the lost-call sweeps' bounds included in the settle). */
async function everyCallEnded(input: CheckInput, byId: Map<string, CallRow>): Promise<CheckResult> {
  const live = (
    await input.db.query<{ id: string; state: string; node_id: string | null; launched_by: string | null; started_at: Date; answered_at: Date | null; age_s: number; hb_age_s: number | null }>(`
    select k.id, k.state, k.node_id, k.launched_by, k.started_at, k.answered_at, extract(epoch from now() - k.started_at)::float8 as age_s,
      extract(epoch from now() - n.last_heartbeat_at)::float8 as hb_age_s
    from calls k left join media_nodes n on n.node_id = k.node_id where k.live order by k.started_at`)
  ).rows;
  const reasons = (await input.db.query<{ end_reason: string | null; n: number }>(`select end_reason, count(*)::int as n from calls group by 1 order by 2 desc`)).rows;
  const figures: Record<string, number | string | null> = { calls: byId.size, still_up: live.length };
  for (const s of ['dialing', 'trying', 'ringing', 'answered']) figures[`still_up_${s}`] = live.filter((l) => l.state === s).length;
  // Of those, the ones whose trunk call had ended (their end never reached the store) or whose agent died.
  const trunkEnded = live.filter((l) => {
    const t = input.taps.calls.get(l.id);
    return t && t.down !== null;
  });
  figures.still_up_but_ended_at_trunk = trunkEnded.length;
  figures.still_up_never_at_trunk = live.filter((l) => !input.taps.calls.has(l.id)).length;
  // Calls the store ended as lost although the trunk reported a normal end (an end lost on the way).
  let sweptAfterNormalEnd = 0;
  for (const c of byId.values()) {
    if (c.state !== 'ended' || (c.end_reason !== 'node_lost' && c.end_reason !== 'refused_trunk_unavailable')) continue;
    const t = input.taps.calls.get(c.id);
    if (t?.reason && t.reason !== 'agent_died') sweptAfterNormalEnd++;
  }
  figures.ended_by_sweep_after_a_normal_end = sweptAfterNormalEnd;
  figures.end_reasons = reasons.map((r) => `${r.end_reason ?? 'null'}:${r.n}`).join(' ');
  return {
    check: 'every_call_ended',
    ok: live.length === 0,
    figures,
    examples: live.slice(0, 8).map((l) => ({ ...l, trunk: input.taps.calls.get(l.id) ?? null })),
  };
}

/** Every usage item counted once: no two items of one source, none missing, one usage event each. */
async function usageOnce(input: CheckInput): Promise<CheckResult> {
  const q = async (sql: string) => Number((await input.db.query<{ n: number }>(sql)).rows[0].n);
  const items = await q(`select count(*)::int as n from usage_events`);
  // One item per source and kind: a call's minutes, a check's numbers (list checks have no call);
  // and at most one correction of it (a call whose node_lost end the agent's own end corrected).
  const duplicates = await q(`select count(*)::int as n from (select source_id, kind, id like '%\\_correction' as fix from usage_events group by 1, 2, 3 having count(*) > 1) x`);
  const corrections = await q(`select count(*)::int as n from usage_events where id like '%\\_correction'`);
  const missingMinutes = await q(`select count(*)::int as n from calls c where c.state = 'ended' and c.answered_at is not null and c.talk_seconds > 0
    and not exists (select 1 from usage_events u where u.call_id = c.id and u.kind = 'call_minute')`);
  const missingAi = await q(`select count(*)::int as n from calls c where c.state = 'ended' and c.ai_seconds > 0
    and not exists (select 1 from usage_events u where u.call_id = c.id and u.kind = 'ai_second')`);
  const missingTransfers = await q(`select count(*)::int as n from calls c where c.transfer_state in ('bridged', 'completed')
    and not exists (select 1 from usage_events u where u.call_id = c.id and u.kind = 'billable_transfer')`);
  // A call's minutes with their correction, if any, are its talk's started minutes.
  const wrongMinutes = await q(`select count(*)::int as n from (select u.call_id, sum(u.quantity) as q from usage_events u where u.kind = 'call_minute' group by 1) u
    join calls c on c.id = u.call_id where u.q <> ceil(c.talk_seconds / 60.0)`);
  const unearned = await q(`select count(*)::int as n from usage_events u join calls c on c.id = u.call_id
    where (u.kind = 'call_minute' and (c.answered_at is null or c.talk_seconds = 0)) or (u.kind = 'ai_second' and c.ai_seconds = 0)`);
  const ev = (
    await input.db.query<{ bad_items: number; orphan_events: number; events: number }>(`
    with e as (select data->>'usage_id' as id, count(*) as n from outbox where subject = 'vd.usage.recorded' group by 1)
    select (select count(*)::int from usage_events u left join e on e.id = u.id where coalesce(e.n, 0) <> 1) as bad_items,
      (select count(*)::int from e left join usage_events u on u.id = e.id where u.id is null) as orphan_events,
      (select coalesce(sum(n), 0)::int from e) as events`)
  ).rows[0];
  const examples = (
    await input.db.query(`select source_id, kind, count(*)::int as n from usage_events group by 1, 2 having count(*) > 1 limit 5`)
  ).rows;
  return {
    check: 'usage_once',
    ok: duplicates === 0 && missingMinutes === 0 && missingAi === 0 && missingTransfers === 0 && wrongMinutes === 0 && unearned === 0 && ev.bad_items === 0 && ev.orphan_events === 0,
    figures: {
      usage_items: items,
      usage_events: ev.events,
      duplicates_by_source: duplicates,
      corrections,
      missing_call_minute: missingMinutes,
      missing_ai_second: missingAi,
      missing_billable_transfer: missingTransfers,
      wrong_call_minute_quantity: wrongMinutes,
      items_without_cause: unearned,
      items_without_exactly_one_event: ev.bad_items,
      events_without_item: ev.orphan_events,
    },
    examples,
  };
}

/**
 * Every event the connections subscribe to reached the receiver at least once, and no delivery
 * was ever sent by two senders at once (the receiver holds each request ~15 ms and notes a
 * second request for a delivery id still being answered).
 */
async function eventsDelivered(input: CheckInput): Promise<CheckResult> {
  const ids = [...input.connectors.keys()];
  const eligible = (
    await input.db.query<{ connector_id: string; event_id: string; subject: string; at: Date }>(
      `select c.id as connector_id, o.id as event_id, o.subject, o.at
       from connectors c join outbox o
         on (o.tenant_id = c.tenant_id or (o.tenant_id is null and o.subject = 'vd.platform.dialing_pause_changed')) and o.at >= date_trunc('milliseconds', c.created_at)
       where c.id = any($1::text[])`,
      [ids],
    )
  ).rows;
  const got = new Set(input.receipts.map((r) => `${r.path}|${r.event}`));
  const missing = eligible.filter((e) => !got.has(`${input.connectors.get(e.connector_id)}|${e.event_id}`));
  const eligibleKeys = new Set(eligible.map((e) => `${input.connectors.get(e.connector_id)}|${e.event_id}`));
  // A connection's events are those of its company written since it was made (the fan-out's
  // rule, `consumeForWebhooks`, to the millisecond).
  const unexpectedList = input.receipts.filter((r) => !eligibleKeys.has(`${r.path}|${r.event}`));
  const unexpected = unexpectedList.length;
  const byDelivery = new Map<string, number>();
  for (const r of input.receipts) byDelivery.set(r.delivery, (byDelivery.get(r.delivery) ?? 0) + 1);
  const resent = [...byDelivery.values()].filter((n) => n > 1).length;
  const rows = (
    await input.db.query<{ status: string; n: number }>(`select status, count(*)::int as n from webhook_deliveries where connector_id = any($1::text[]) group by 1`, [ids])
  ).rows;
  const queued = await input.db.query<{ n: number }>(
    `select count(*)::int as n from (select c.id, o.id as e from connectors c join outbox o
       on (o.tenant_id = c.tenant_id or (o.tenant_id is null and o.subject = 'vd.platform.dialing_pause_changed')) and o.at >= date_trunc('milliseconds', c.created_at)
       where c.id = any($1::text[]) and not exists (select 1 from webhook_deliveries d where d.connector_id = c.id and d.event_id = o.id)) x`,
    [ids],
  );
  const backlog = await input.db.query<{ n: number }>(`select count(*)::int as n from outbox_pending where consumer = 'webhooks'`);
  const missingBySubject = new Map<string, number>();
  for (const m of missing) missingBySubject.set(m.subject, (missingBySubject.get(m.subject) ?? 0) + 1);
  return {
    check: 'events_delivered',
    ok: missing.length === 0 && input.overlaps.length === 0,
    figures: {
      connections: ids.length,
      events_for_connections: eligible.length,
      requests_received: input.receipts.length,
      not_received: missing.length,
      received_more_than_once: resent,
      concurrent_sends_of_one_delivery: input.overlaps.length,
      received_not_subscribed: unexpected,
      events_without_delivery_row: queued.rows[0].n,
      outbox_backlog: backlog.rows[0].n,
      delivery_rows: rows.map((r) => `${r.status}:${r.n}`).join(' '),
      not_received_by_subject: [...missingBySubject].map(([s, n]) => `${s}:${n}`).join(' '),
    },
    examples: [...missing.slice(0, 5), ...input.overlaps.slice(0, 5).map((d) => ({ overlap: d })), ...unexpectedList.slice(0, 3).map((u) => ({ unexpected: u }))],
  };
}

/**
 * No call reached a trunk while a kill-switch pause (global, or its company's) had stood longer
 * than the fail-closed bound. A pause stands from the commit of its change (commit timestamps are
 * on in the suite's Postgres) to the commit of the change that lifts it.
 */
async function noLaunchWhilePaused(input: CheckInput, byId: Map<string, CallRow>): Promise<CheckResult> {
  const changes = (
    await input.db.query<{ seq: string; target: string; paused: boolean; committed: Date | null; at: Date }>(`
    select seq, data->>'target' as target, (data->>'paused')::boolean as paused, pg_xact_commit_timestamp(xmin) as committed, at
    from outbox where subject = 'vd.platform.dialing_pause_changed'`)
  ).rows;
  changes.sort((a, b) => (a.committed?.getTime() ?? 0) - (b.committed?.getTime() ?? 0) || Number(a.seq) - Number(b.seq));
  const intervals = new Map<string, Array<{ from: number; to: number }>>();
  const open = new Map<string, number>();
  let noCommitTs = 0;
  for (const c of changes) {
    if (!c.committed) noCommitTs++;
    const t = (c.committed ?? c.at).getTime();
    if (c.paused) {
      if (!open.has(c.target)) open.set(c.target, t);
    } else if (open.has(c.target)) {
      const l = intervals.get(c.target) ?? [];
      l.push({ from: open.get(c.target)!, to: t });
      intervals.set(c.target, l);
      open.delete(c.target);
    }
  }
  for (const [target, from] of open) {
    const l = intervals.get(target) ?? [];
    l.push({ from, to: Infinity });
    intervals.set(target, l);
  }
  let launches = 0;
  let insideBound = 0;
  const late: unknown[] = [];
  let maxLate = 0;
  for (const c of input.taps.calls.values()) {
    const row = byId.get(c.call);
    if (!row) continue;
    launches++;
    for (const target of ['global', row.tenant_id]) {
      for (const p of intervals.get(target) ?? []) {
        if (c.up < p.from || c.up >= p.to) continue;
        const after = c.up - p.from;
        if (after <= input.pauseBoundMs) insideBound++;
        else {
          maxLate = Math.max(maxLate, after);
          // The row is written (its launch transaction started) before the last look at the switch;
          // a row started past the bound means the look itself came after it.
          late.push({ call: c.call, tenant: row.tenant_id, target, at_trunk_ms_after_pause: after, row_started_ms_after_pause: row.started_at.getTime() - p.from, pause_from: new Date(p.from).toISOString(), node: c.node, launched_by: row.launched_by });
        }
      }
    }
  }
  const pauses = [...intervals.values()].reduce((n, l) => n + l.length, 0);
  return {
    check: 'no_launch_while_paused',
    ok: late.length === 0 && noCommitTs === 0,
    figures: { pause_changes: changes.length, pauses, launches, launches_within_bound_of_a_new_pause: insideBound, launches_past_bound: late.length, worst_ms_after_pause: maxLate, changes_without_commit_time: noCommitTs },
    examples: late.slice(0, 8),
  };
}

/**
 * No actor lost: every company and campaign actor is held by a running instance (its lease in
 * Redis) and that instance is the owner the store names; a node actor is held that way or by
 * nobody (its next event claims it); every campaign started is still running (or completed with
 * nobody left to call), its row and actor agreeing; and each running campaign dialed again once
 * the faults were over.
 */
async function noActorLost(input: CheckInput, byId: Map<string, CallRow>): Promise<CheckResult> {
  const actors = (await input.db.query<{ kind: string; id: string; owner: string | null; snapshot: { value?: unknown } }>(`select kind, id, owner, snapshot from actors`)).rows;
  const problems: unknown[] = [];
  let held = 0;
  let unheldNodes = 0;
  for (const a of actors) {
    const v = await input.redis.get(`${input.redisPrefix}lease:{actor:${a.kind}:${a.id}}`);
    const holder = v ? v.slice(0, v.lastIndexOf('|')) : null;
    if (holder) {
      held++;
      if (!input.liveInstances.has(holder)) problems.push({ kind: a.kind, id: a.id, problem: 'lease held by an instance that is not running', holder });
      else if (a.owner !== holder) problems.push({ kind: a.kind, id: a.id, problem: 'lease holder is not the owner in the store', holder, owner: a.owner });
    } else if (a.kind === 'node') unheldNodes++;
    else problems.push({ kind: a.kind, id: a.id, problem: 'held by nobody after the settle (the adoption sweep did not take it)', owner: a.owner });
  }
  const camps = (
    await input.db.query<{ id: string; state: string; idle_reason: string | null; value: unknown; left: number }>(
      `select c.id, c.state, c.idle_reason, a.snapshot->'value' as value,
        (select count(*)::int from people p where p.list_id = any(c.list_ids) and p.status in ('new', 'due', 'calling')) as left
       from campaigns c left join actors a on a.kind = 'campaign' and a.id = c.id where c.id = any($1::text[])`,
      [input.campaigns],
    )
  ).rows;
  const recent = new Map<string, number>();
  for (const c of input.taps.calls.values()) {
    if (c.up < input.recovery.from || c.up >= input.recovery.to) continue;
    const camp = byId.get(c.call)?.campaign_id;
    if (camp) recent.set(camp, (recent.get(camp) ?? 0) + 1);
  }
  let running = 0;
  let completed = 0;
  for (const c of camps) {
    if (String(c.value) !== c.state) problems.push({ campaign: c.id, problem: 'row and actor disagree', row: c.state, actor: c.value });
    if (c.state === 'running') {
      running++;
      if (!recent.get(c.id)) problems.push({ campaign: c.id, problem: 'running but dialed nothing after the faults', idle_reason_after_the_final_pause: c.idle_reason, people_left: c.left });
    } else if (c.state === 'completed') {
      completed++;
      if (c.left > 0) problems.push({ campaign: c.id, problem: 'completed with people left to call', left: c.left });
    } else problems.push({ campaign: c.id, problem: `was running, now ${c.state}` });
  }
  const launchesAfter = [...recent.values()].reduce((n, x) => n + x, 0);
  return {
    check: 'no_actor_lost',
    ok: problems.length === 0 && camps.length === input.campaigns.length,
    figures: {
      actors: actors.length,
      held_by_running_instances: held,
      node_actors_unheld: unheldNodes,
      campaigns_started: input.campaigns.length,
      running,
      completed,
      launches_after_faults: launchesAfter,
      problems: problems.length,
    },
    examples: problems.slice(0, 8),
  };
}

/** No process died by itself (an instance or an agent that exited without being killed by the driver). */
function processes(input: CheckInput): CheckResult {
  return { check: 'no_crash', ok: input.crashes.length === 0, figures: { crashes: input.crashes.length }, examples: input.crashes.slice(0, 5) };
}
