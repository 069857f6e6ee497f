/**
 * The company (tenant) machine: on, suspended, closing, with every transition of the spec's
 * table. Pure: no I/O. The suspend chain is an effect the runtime runs while `chain.pending`;
 * its outcome comes back as CHAIN_FINISHED. A failed chain is retried by itself at `chain.retryAt`
 * (an absolute time, so it survives a restore), and a repeated suspend retries it at once.
 */
import { assign, setup } from 'xstate';
import { MIN_REASON, reasonGiven, reasonLongEnough } from '../../shared/reason.ts';
import type { Who } from '../../shared/who.ts';

export type StepFailure = { step: string; message: string };

export type CompanyContext = {
  tenantId: string;
  reason: string | null;
  closing: { reason: string; date: string } | null;
  chain: { pending: boolean; attempts: number; failures: StepFailure[]; retryAt: number | null; finishedAt: number | null };
};

export type CompanyEvent =
  | { type: 'SUSPEND'; reason: string; by: Who }
  | { type: 'RESUME'; by: Who }
  | { type: 'SCHEDULE_CLOSING'; reason: string; date: string; by: Who }
  | { type: 'CANCEL_CLOSING'; by: Who }
  | { type: 'CHAIN_FINISHED'; failures: StepFailure[]; at: number }
  | { type: 'TICK'; at: number };

/** First automatic retry of a failed chain; doubles each time, up to `MAX_RETRY_MS`. */
export const RETRY_BASE_MS = 30_000;
export const MAX_RETRY_MS = 15 * 60_000;

const dateOk = (date: unknown) => typeof date === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(date) && !Number.isNaN(Date.parse(`${date}T00:00:00Z`));

export const companyMachine = setup({
  types: {
    context: {} as CompanyContext,
    events: {} as CompanyEvent,
    input: {} as { tenantId: string },
  },
  guards: {
    suspendAllowed: ({ event }) => event.type === 'SUSPEND' && reasonLongEnough(event.reason),
    closingAllowed: ({ event }) => event.type === 'SCHEDULE_CLOSING' && reasonGiven(event.reason) && dateOk(event.date),
    retryDue: ({ context, event }) => event.type === 'TICK' && context.chain.retryAt !== null && event.at >= context.chain.retryAt,
  },
  actions: {
    recordSuspend: assign(({ event }) => (event.type === 'SUSPEND' ? { reason: event.reason.trim() } : {})),
    recordClosing: assign(({ event }) =>
      event.type === 'SCHEDULE_CLOSING' ? { reason: event.reason.trim(), closing: { reason: event.reason.trim(), date: event.date } } : {},
    ),
    clearClosing: assign({ closing: null }),
    clearAll: assign({ reason: null, closing: null, chain: { pending: false, attempts: 0, failures: [], retryAt: null, finishedAt: null } }),
    startChain: assign(({ context }) => ({ chain: { ...context.chain, pending: true, retryAt: null } })),
    finishChain: assign(({ context, event }) => {
      if (event.type !== 'CHAIN_FINISHED') return {};
      const attempts = context.chain.attempts + 1;
      const retryAt = event.failures.length ? event.at + Math.min(RETRY_BASE_MS * 2 ** (attempts - 1), MAX_RETRY_MS) : null;
      return { chain: { pending: false, attempts: event.failures.length ? attempts : 0, failures: event.failures, retryAt, finishedAt: event.at } };
    }),
  },
}).createMachine({
  id: 'company',
  context: ({ input }) => ({
    tenantId: input.tenantId,
    reason: null,
    closing: null,
    chain: { pending: false, attempts: 0, failures: [], retryAt: null, finishedAt: null },
  }),
  initial: 'on',
  on: {
    CHAIN_FINISHED: { actions: 'finishChain' },
    TICK: { guard: 'retryDue', actions: 'startChain' },
  },
  states: {
    on: {
      on: {
        SUSPEND: { guard: 'suspendAllowed', target: 'suspended', actions: ['recordSuspend', 'startChain'] },
        SCHEDULE_CLOSING: { guard: 'closingAllowed', target: 'closing', actions: ['recordClosing', 'startChain'] },
      },
    },
    suspended: {
      on: {
        // Suspending again retries whatever failed; the suspension itself already stands.
        SUSPEND: { guard: 'suspendAllowed', actions: ['recordSuspend', 'startChain'] },
        RESUME: { target: 'on', actions: 'clearAll' },
        SCHEDULE_CLOSING: { guard: 'closingAllowed', target: 'closing', actions: ['recordClosing', 'startChain'] },
      },
    },
    closing: {
      on: {
        SUSPEND: { guard: 'suspendAllowed', actions: 'startChain' },
        SCHEDULE_CLOSING: { guard: 'closingAllowed', actions: ['recordClosing', 'startChain'] },
        CANCEL_CLOSING: { target: 'suspended', actions: 'clearClosing' },
      },
    },
  },
});

/** Why an event is refused in a state, for the caller. */
export function companyRefusal(state: string, event: { type: string; reason?: unknown; date?: unknown }): { code: 'unprocessable' | 'conflict'; message: string } {
  if (event.type === 'SUSPEND' && !reasonLongEnough(event.reason)) {
    return { code: 'unprocessable', message: `reason must be at least ${MIN_REASON} characters` };
  }
  if (event.type === 'SCHEDULE_CLOSING' && !reasonGiven(event.reason)) return { code: 'unprocessable', message: 'reason must not be blank' };
  if (event.type === 'SCHEDULE_CLOSING' && !dateOk(event.date)) return { code: 'unprocessable', message: 'date must be a YYYY-MM-DD date' };
  if (event.type === 'RESUME' && state === 'closing') {
    return { code: 'conflict', message: 'a closing company cannot be resumed; cancel closing first (DELETE …/closing)' };
  }
  if (event.type === 'RESUME' && state === 'on') return { code: 'conflict', message: 'the company is not suspended' };
  if (event.type === 'CANCEL_CLOSING') return { code: 'conflict', message: 'the company is not closing' };
  return { code: 'conflict', message: `${event.type.toLowerCase()} is not possible while the company is ${state}` };
}
