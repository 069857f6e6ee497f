/**
 * The kill-switch reader fails closed: only a read makes it fresh. A change notice that waited in
 * a socket (a stalled process, a Redis restart) while every read failed must not open dialing,
 * whatever it says; the next good read does. Seen in the fault suite: a notice from before a pause,
 * delivered after a 15 s SIGSTOP, let an instance launch 5.5 s into the pause.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MemoryCoordinator } from '../../control-plane/infra/coordination/memory.ts';
import { DIALING_CHANNEL, type SwitchState } from '../../control-plane/platform-controls/kill-switch.ts';
import { KillSwitchReader } from '../../dialer/kill-switch-reader.ts';
import { eventually } from '../support/eventually.ts';

test('a stale notice after failed reads leaves the reader unreadable; a good read opens it', async () => {
  let now = 0;
  let failing = false;
  let failedReads = 0;
  let state: SwitchState = { version: 1, global: null, tenants: {} } as unknown as SwitchState;
  const coordinator = new MemoryCoordinator();
  const reader = new KillSwitchReader({
    source: async () => {
      if (failing) {
        failedReads++;
        throw new Error('store and mirror unreachable');
      }
      return state;
    },
    coordinator,
    intervalMs: 60_000,
    now: () => now,
  });
  await reader.start();
  assert.equal(reader.check('ten_a'), { launch: true, idle_reason: null });
  failing = true;
  now += 10_000;
  assert.is(reader.check('ten_a').idle_reason, 'platform_pause_unreadable', 'no read for 10 s: closed');
  // A notice newer than the reader's state, saying nothing is paused, arrives late.
  const failedBefore = failedReads;
  await coordinator.publish(DIALING_CHANNEL, JSON.stringify({ version: 2, global: null, tenants: {} }));
  // The notice taken: it made the reader read again at once, and that read failed.
  await eventually('the read the notice asked for', () => failedReads > failedBefore);
  assert.is(reader.check('ten_a').idle_reason, 'platform_pause_unreadable', 'a notice alone does not make the reader fresh');
  failing = false;
  state = { version: 3, global: null, tenants: {} } as unknown as SwitchState;
  await reader.refresh();
  assert.equal(reader.check('ten_a'), { launch: true, idle_reason: null });
  await reader.stop();
  await coordinator.close?.();
});

test.run();
