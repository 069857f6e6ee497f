/** The suspend chain's runner alone: steps side by side, every failure listed in the chain's order. No I/O. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runChain, type SuspendStep } from '../../control-plane/companies/suspend-chain.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('suspend chain runner');

/** A step that records when it started and ended, and fails with `fail` after `ms`. */
function step(name: string, log: string[], ms: number, fail?: unknown): SuspendStep {
  return {
    name,
    async run(tenantId) {
      log.push(`start ${name} ${tenantId}`);
      // A step that takes this long, on purpose (the chain's order is what is checked).
      await sleep(ms);
      log.push(`end ${name}`);
      if (fail !== undefined) throw fail;
    },
  };
}

t('every step runs for the company, side by side: all start before any ends; no failure, an empty list', async () => {
  const log: string[] = [];
  const failures = await runChain([step('sign_out', log, 30), step('stop_api_keys', log, 10), step('pause_campaigns', log, 20)], 'ten_1');
  assert.equal(failures, []);
  assert.equal(log.slice(0, 3), ['start sign_out ten_1', 'start stop_api_keys ten_1', 'start pause_campaigns ten_1']);
  assert.equal(log.slice(3).sort(), ['end pause_campaigns', 'end sign_out', 'end stop_api_keys']);
});

t('a failing step does not stop the others; failures come in the chain order, not the order they happened', async () => {
  const log: string[] = [];
  const failures = await runChain(
    [step('sign_out', log, 30, new Error('sessions table locked')), step('stop_api_keys', log, 5), step('pause_campaigns', log, 1, new Error('2 of 100 running campaigns could not be paused'))],
    'ten_2',
  );
  assert.equal(failures, [
    { step: 'sign_out', message: 'sessions table locked' },
    { step: 'pause_campaigns', message: '2 of 100 running campaigns could not be paused' },
  ]);
  assert.ok(log.includes('end stop_api_keys'), 'the step between them ran to its end');
});

t('a step that throws at once, or throws something that is not an Error, is reported with a message', async () => {
  const sync: SuspendStep = {
    name: 'core_hold',
    run: () => {
      throw new Error('store refused');
    },
  };
  const failures = await runChain([sync, step('odd', [], 1, 'a plain string'), step('empty', [], 1, new Error(''))], 'ten_3');
  assert.equal(failures, [
    { step: 'core_hold', message: 'store refused' },
    { step: 'odd', message: 'a plain string' },
    { step: 'empty', message: 'Error' },
  ]);
});

t.run();
