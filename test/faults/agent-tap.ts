/**
 * Preloaded into a media agent process of the fault suite (`node --import ./test/faults/agent-tap.ts
 * media-agent/main.ts`): notes what the simulated trunk really does, so the suite can compare it
 * with what the control plane wrote down. One line per fact, appended synchronously to the file
 * named by `VD_FAULTS_TAP_FILE` (a SIGKILL loses nothing already noted):
 *
 *   s <ms>                          the process started
 *   o <ms> <call_id> <to>           an originate reached the trunk (the call is up from here)
 *   e <ms> <call_id> <reason>       the trunk ended the call (or refused it: no `o` line then)
 *
 * Times are wall-clock milliseconds (the same clock as the control plane's and Postgres's here).
 */
import { openSync, writeSync } from 'node:fs';
import { SimulatedTrunk } from '../../media-agent/simulated-trunk.ts';
import type { TrunkCall, TrunkEvent } from '../../media-agent/trunk.ts';

const file = process.env.VD_FAULTS_TAP_FILE;
if (file) {
  const fd = openSync(file, 'a');
  const note = (line: string) => writeSync(fd, `${line}\n`);
  note(`s ${Date.now()}`);
  const originate = SimulatedTrunk.prototype.originate;
  SimulatedTrunk.prototype.originate = function (this: SimulatedTrunk, call: TrunkCall, onEvent: (e: TrunkEvent) => void): void {
    note(`o ${Date.now()} ${call.call_id} ${call.to}`);
    originate.call(this, call, (e: TrunkEvent) => {
      if (e.type === 'ended') note(`e ${Date.now()} ${call.call_id} ${e.reason}`);
      onEvent(e);
    });
  };
}
