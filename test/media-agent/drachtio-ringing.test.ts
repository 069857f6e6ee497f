/**
 * The drachtio trunk reports the far end's ringing (issue 26, item 3): the INVITE's 100 is
 * `placed` (the call `trying`), the first 180 or 183 is `ringing` (once), then the answer or the
 * final status. With the real drachtio-srf client against the drachtio-server stand-in, which
 * sends a 180 for every call before its answer or final.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { closeHarnesses, harness, place } from '../support/drachtio-harness.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('drachtio trunk: ringing');

t.after.each(closeHarnesses);

t('placed, then ringing (180) once, then answered; a rejected call rings before its final; a ringing call hung up: CANCEL', async () => {
  const { trunk } = await harness();
  await trunk.start();
  const answered = place(trunk, '+15550003');
  await answered.next('answered');
  assert.equal(answered.all.map((e) => e.type), ['placed', 'ringing', 'answered']);
  assert.equal(answered.ringing, [{ type: 'ringing', sip_status: 180 }]);
  const busy = place(trunk, '+15550487');
  await busy.next('ended');
  assert.equal(busy.all.map((e) => (e.type === 'ended' ? `ended:${e.sip_status}` : e.type)), ['placed', 'ringing', 'ended:486']);
  const ringing = place(trunk, '+15550002');
  await ringing.next('ringing');
  trunk.hangup(ringing.call_id);
  await ringing.next('ended');
  assert.equal(ringing.all.map((e) => (e.type === 'ended' ? `ended:${e.reason}` : e.type)), ['placed', 'ringing', 'ended:canceled']);
  trunk.hangup(answered.call_id);
  await eventually('the answered call ended', () => answered.all.some((e) => e.type === 'ended'));
});

t.run();
