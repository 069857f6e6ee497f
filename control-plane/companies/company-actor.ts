/**
 * The company actor: the company machine plus what the runtime does around it — the rows and
 * outbox events each transition writes, the suspend chain as its effect, and its deadline.
 */
import type { SnapshotFrom } from 'xstate';
import { companyMachine, companyRefusal, type CompanyContext, type CompanyEvent } from './company.machine.ts';
import type { ActorDefinition } from '../infra/runtime/definition.ts';
import type { NewEvent } from '../infra/runtime/outbox.ts';
import { runChain, type SuspendStep } from './suspend-chain.ts';
import type { EventName } from '../../shared/events.ts';

type Snap = SnapshotFrom<typeof companyMachine>;

const SUBJECTS: Record<string, EventName> = {
  SUSPEND: 'vd.platform.company_suspended',
  RESUME: 'vd.platform.company_resumed',
  SCHEDULE_CLOSING: 'vd.platform.company_closing_scheduled',
  CANCEL_CLOSING: 'vd.platform.company_closing_cancelled',
};

/** What a caller of suspend, resume or closing gets back from the actor. */
export type CompanyReply = { state: string; complete: boolean; failures: CompanyContext['chain']['failures'] };

/** The company actor's definition, with the suspend chain's steps (injectable for tests). */
export function companyActor(steps: () => SuspendStep[]): ActorDefinition<typeof companyMachine> {
  return {
    kind: 'company',
    machine: companyMachine,
    version: 1,
    refusal: (snap: Snap, event) => companyRefusal(String(snap.value), event as { type: string }),
    async onTransition({ tx, id, prev, next, event, emit }) {
      const e = event as CompanyEvent;
      const state = String(next.value) as 'on' | 'suspended' | 'closing';
      const subject = SUBJECTS[e.type];
      if (!subject) return;
      await tx
        .updateTable('companies')
        .set({
          status: state,
          status_reason: next.context.reason,
          closing_date: next.context.closing?.date ?? null,
          ...(state === 'on' ? { core_hold: false } : {}),
          updated_at: new Date(),
        })
        .where('id', '=', id)
        .execute();
      const by = 'by' in e ? e.by : null;
      const data: Record<string, unknown> = { tenant_id: id, from: String(prev.value), to: state, actor: by };
      if ('reason' in e) data.reason = e.reason;
      if (e.type === 'SCHEDULE_CLOSING') data.date = e.date;
      emit([{ subject, tenant_id: id, about: id, data } satisfies NewEvent]);
    },
    // The chain's outcome and a retry's start change only the snapshot: on the suspension's path
    // (CHAIN_FINISHED is written before the answer), one statement instead of a transaction.
    snapshotOnly: (event) => !Object.hasOwn(SUBJECTS, event.type),
    async effects(id, snap) {
      if (!snap.context.chain.pending) return [];
      const failures = await runChain(steps(), id);
      return [{ type: 'CHAIN_FINISHED', failures, at: Date.now() }];
    },
    deadline: (snap) => snap.context.chain.retryAt,
    reply: (snap): CompanyReply => ({ state: String(snap.value), complete: snap.context.chain.failures.length === 0, failures: snap.context.chain.failures }),
  };
}
