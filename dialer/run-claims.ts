/**
 * The claims of people for the runs a `Dialer` paces: claimed ahead in small batches (held
 * `CLAIM_HOLD`, inside their calling hours), given back when they cannot be called soon, and all
 * given back when a run retires. What a claim found becomes the run's `supply` (`campaign-run.ts`).
 */
import type { Logger } from '../shared/logger.ts';
import { ignore } from '../shared/errors.ts';
import type { Clock } from '../shared/clock.ts';
import type { Services } from '../control-plane/context.ts';
import type { CampaignRun, Supply } from './campaign-run.ts';
import type { CallingHours } from './calling-hours.ts';
import { claimPeople, dueOutsideHours, releaseClaims } from './launch-rows.ts';

/** People a claim holds before the reconcile gives them back (the claim's `next_attempt_at`). */
const CLAIM_HOLD = '1 minute';

export class RunClaims {
  readonly #s: Services;
  readonly #hours: CallingHours;
  readonly #clock: Clock;
  readonly #log: Logger;

  constructor(deps: { services: Services; hours: CallingHours; clock: Clock; log: Logger }) {
    this.#s = deps.services;
    this.#hours = deps.hours;
    this.#clock = deps.clock;
    this.#log = deps.log;
  }

  /** Starts a claim of up to `n` due people for the run (at most one at a time). */
  refill(run: CampaignRun, n: number): void {
    if (!run.settings || n <= 0 || run.claiming) return;
    run.claiming = this.#claim(run, n).finally(() => {
      run.claiming = null;
    });
  }

  /**
   * Gives claimed people back. A claim of the campaign waits for it (`refill`): run at once, the
   * claim did not see them given back, found nobody, and the campaign read `no_people` until its
   * next claim took them again (the idle reason flapped while no node had room).
   */
  giveBack(run: CampaignRun, people: string[]): void {
    const release = releaseClaims(this.#s.store.db, run.id, run.epoch, people).catch((err) => this.#log.warn({ err }, 'claimed people could not be given back; the reconcile will'));
    run.releasing = run.releasing.then(() => release);
  }

  /** Retires the run: it does nothing more, and its buffered people go back. */
  async retire(run: CampaignRun): Promise<void> {
    if (run.retired) return;
    run.phase = { is: 'retired' };
    const given = run.buffer.splice(0);
    if (given.length) await releaseClaims(this.#s.store.db, run.id, run.epoch, given.map((p) => p.id)).catch(ignore('claims not given back are found by the reconcile that looks for stale claims'));
  }

  /** Claims up to `n` due people of the campaign's lists (never one on the do-not-call list). */
  async #claim(run: CampaignRun, n: number): Promise<void> {
    const st = run.settings!;
    try {
      await run.releasing;
      const now = this.#clock.now();
      await this.#hours.refresh();
      let open = this.#hours.open(st.window, now);
      let rows = await claimPeople(this.#s, run.tenantId, run.id, run.epoch, st.lists, n, CLAIM_HOLD, { zones: open.ids, at: new Date(now) });
      if (rows.length === 0) {
        // Zone sets a list check made since the last read (their people could not be claimed):
        // when some are open, the claim is made again at once, so a campaign whose list was just
        // checked does not read no_people or outside_calling_hours until its next claim.
        await this.#hours.refreshZones();
        const fresh = this.#hours.open(st.window, now);
        if (fresh.ids.length !== open.ids.length) {
          open = fresh;
          rows = await claimPeople(this.#s, run.tenantId, run.id, run.epoch, st.lists, n, CLAIM_HOLD, { zones: open.ids, at: new Date(now) });
        }
      }
      const claimedAt = Date.now();
      if (run.retired) {
        await releaseClaims(this.#s.store.db, run.id, run.epoch, rows.map((r) => r.id));
        return;
      }
      run.buffer.push(...rows.map((r) => ({ id: r.id, phone: r.phone_number, claimedAt, zoneId: r.zone_id })));
      if (rows.length > 0) {
        run.supply = { is: 'due' };
        return;
      }
      const emptyClaims = run.emptyClaims + 1;
      // Until the look below answers, a campaign waiting for calling hours keeps waiting for them
      // (its idle reason does not flap to no_people and back).
      const prev = run.supply;
      run.supply = prev.is === 'outside_hours' ? { ...prev, emptyClaims, lastClaimAt: claimedAt } : { is: 'none_due', emptyClaims, lastClaimAt: claimedAt };
      // Nobody due inside their hours: are some due outside them, and when does the first open?
      const closedZones = this.#hours.closedIds(open.set);
      const waiting = await dueOutsideHours(this.#s.store.db, run.tenantId, st.lists, closedZones, new Date(now));
      // People given back meanwhile are due: that stands.
      if ((run.supply as Supply).is === 'due') return;
      run.supply =
        waiting.length > 0
          ? { is: 'outside_hours', emptyClaims, lastClaimAt: claimedAt, nextWindowAt: this.#hours.nextOpening(st.window, waiting, now) }
          : { is: 'none_due', emptyClaims, lastClaimAt: claimedAt };
    } catch (err) {
      this.#log.warn({ err, campaign_id: run.id }, 'people could not be claimed');
    }
  }
}
