/**
 * The dialer's view of calling hours: the legal rules and the callee zone sets the list check has
 * found (`callee_zones`), held in memory and re-read every 10 s (a zone set not known yet is
 * read at once). For a campaign's window it answers, for the current minute, which zone sets are
 * open (the claim takes only people whose `zone_id` is among them, by index), when the first of
 * some zone sets opens next (`next_window_at`), and a region's legal calls-a-day limit. Windows
 * open and close on whole minutes, so each answer is kept for the minute it was asked in.
 */
import { sql } from 'kysely';
import type { Store } from '../control-plane/infra/db/store.ts';
import { readLegalRules } from '../control-plane/compliance/legal-rules.ts';
import { legalRuleFor, nextOpening, openInAll, windowFor, type CampaignWindow, type LegalRules } from '../control-plane/compliance/calling-window.ts';

export type ZoneSet = { id: number; zones: string[]; region: string };

const REREAD_MS = 10_000;

export class CallingHours {
  readonly #store: Store;
  #rules: LegalRules | null = null;
  readonly #zones = new Map<number, ZoneSet>();
  #maxId = 0;
  #readAt = -Infinity;
  #reading: Promise<void> | null = null;
  /** Open zone ids by campaign window and minute. */
  readonly #open = new Map<string, { minute: number; ids: number[]; set: Set<number> }>();

  constructor(store: Store) {
    this.#store = store;
  }

  /**
   * Re-reads the rules and new zone sets when 10 s have passed on the wall clock (or `force`), one
   * read at a time. The wall clock, not the dialer's: a test's clock standing still must not stop
   * the re-reads.
   */
  async refresh(force = false): Promise<void> {
    const now = performance.now();
    if (!force && this.#rules && now - this.#readAt < REREAD_MS) return;
    this.#reading ??= (async () => {
      try {
        const [rules, zones] = await Promise.all([
          readLegalRules(this.#store.db),
          // The whole (small) table: a serial id can commit after a higher one on another
          // instance, so "newer than the highest seen" alone could miss a set for good.
          sql<ZoneSet>`select id, zones, region from callee_zones order by id`.execute(this.#store.db),
        ]);
        const changed = JSON.stringify(rules.default) !== JSON.stringify(this.#rules?.default) || JSON.stringify([...rules.regions]) !== JSON.stringify([...(this.#rules?.regions ?? [])]);
        this.#rules = rules;
        if (changed) this.#open.clear();
        this.#learn(zones.rows);
        this.#readAt = now;
      } finally {
        this.#reading = null;
      }
    })();
    await this.#reading;
  }

  /**
   * Reads the zone sets made since the last read (one look by primary key; a claim that found
   * nobody asks). One committed late with a lower id is found by the next full re-read (10 s).
   */
  async refreshZones(): Promise<void> {
    const zones = await sql<ZoneSet>`select id, zones, region from callee_zones where id > ${this.#maxId} order by id`.execute(this.#store.db);
    this.#learn(zones.rows);
  }

  /** Zone sets read from the store (never changed once made): new ones drop the cached open sets. */
  #learn(rows: ZoneSet[]): void {
    const known = this.#zones.size;
    for (const z of rows) {
      this.#zones.set(z.id, z);
      this.#maxId = Math.max(this.#maxId, z.id);
    }
    if (this.#zones.size !== known) this.#open.clear();
  }

  zoneSet(id: number): ZoneSet | undefined {
    return this.#zones.get(id);
  }

  /** The zone sets open now for `window` (the campaign's; null: the legal window alone). */
  open(window: CampaignWindow, at: number): { ids: number[]; set: Set<number> } {
    const minute = Math.floor(at / 60_000);
    const key = JSON.stringify(window);
    const hit = this.#open.get(key);
    if (hit && hit.minute === minute) return hit;
    const ids: number[] = [];
    if (this.#rules) {
      for (const z of this.#zones.values()) {
        if (openInAll(z.zones, windowFor(window, legalRuleFor(this.#rules, z.region)), at)) ids.push(z.id);
      }
    }
    const entry = { minute, ids, set: new Set(ids) };
    if (this.#open.size > 1000) this.#open.clear();
    this.#open.set(key, entry);
    return entry;
  }

  /** Every known zone set not in `open`. */
  closedIds(open: ReadonlySet<number>): number[] {
    return [...this.#zones.keys()].filter((id) => !open.has(id));
  }

  /** The first instant (ms) at or after `at` when one of the zone sets `ids` opens for `window`. */
  nextOpening(window: CampaignWindow, ids: number[], at: number): number | null {
    if (!this.#rules) return null;
    let best: number | null = null;
    for (const id of ids) {
      const z = this.#zones.get(id);
      if (!z) continue;
      const t = nextOpening(z.zones, windowFor(window, legalRuleFor(this.#rules, z.region)), at);
      if (t !== null && (best === null || t < best)) best = t;
    }
    return best;
  }

  /**
   * A callee given by zones and region (a manual dial): whether `window` is open for them at
   * `at`, when it opens next, and their region's legal calls-a-day limit.
   */
  judge(window: CampaignWindow, callee: { zones: readonly string[]; region: string }, at: number): { open: boolean; next: number | null; legalPerDay: number | null } {
    if (!this.#rules) return { open: false, next: null, legalPerDay: null };
    const rule = legalRuleFor(this.#rules, callee.region);
    const w = windowFor(window, rule);
    return { open: openInAll(callee.zones, w, at), next: nextOpening(callee.zones, w, at), legalPerDay: rule.maxCallsPerDay };
  }

  /** The legal calls-a-day limit of zone set `id`'s region (null: none). */
  legalCallsPerDay(id: number | null): number | null {
    if (!this.#rules) return null;
    const z = id === null ? undefined : this.#zones.get(id);
    return legalRuleFor(this.#rules, z?.region ?? '').maxCallsPerDay;
  }
}
