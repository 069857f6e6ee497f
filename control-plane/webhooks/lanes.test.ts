/**
 * A webhook connection's lane rules (`control-plane/webhooks/lanes.ts`): the pace halves per
 * failure in a row down to one, and the table the store's statements look a connection's room up
 * in (`rooms[least(failures, cardinality(rooms) - 1) + 1]`) gives `laneRoom` for every count of
 * failures in a row, past the table's end too.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { IDLE_LANE, laneRoom, paceOf, roomsByFailures } from './lanes.ts';

const t = suite('webhook lanes');

t('the pace: halved per failure in a row, never below one', () => {
  assert.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 50].map((n) => paceOf(128, n)), [128, 64, 32, 16, 8, 4, 2, 1, 1, 1]);
  assert.is(paceOf(0, 0), 1);
  assert.is(paceOf(1, 0), 1);
});

t('the room: two rounds of the pace, more for a lane that keeps up at its full pace, less what it holds', () => {
  assert.is(laneRoom(128, 1024, IDLE_LANE, 0), 256);
  assert.is(laneRoom(128, 1024, IDLE_LANE, 3), 32);
  assert.is(laneRoom(128, 1024, { streak: 0, recent: 700, held: 100 }, 0), 600, 'keeps up: what it finished lately');
  assert.is(laneRoom(128, 512, { streak: 0, recent: 700, held: 100 }, 0), 412, 'up to the instance room');
  assert.is(laneRoom(128, 1024, { streak: 0, recent: 700, held: 100 }, 1), 28, 'the store saw a failure: two rounds of 64, less 100 held');
  assert.is(laneRoom(128, 1024, { streak: 2, recent: 700, held: 10 }, 0), 54, 'failures seen here: two rounds of 32');
  assert.is(laneRoom(128, 1024, { streak: 9, recent: 0, held: 5 }, 0), 0, 'never below none');
});

t('property: the table looked up as the statements do gives laneRoom for any count of failures in a row', () => {
  const lane = fc.record({ streak: fc.nat({ max: 40 }), recent: fc.nat({ max: 5000 }), held: fc.nat({ max: 600 }) });
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 200_000 }), fc.nat({ max: 3000 }), lane, fc.nat({ max: 80 }), (perConnection, keepUpCap, l, failures) => {
      const rooms = roomsByFailures(perConnection, keepUpCap, l);
      assert.ok(rooms.length >= 2 && rooms.length <= 31, `${rooms.length} entries`);
      assert.is(rooms[Math.min(failures, rooms.length - 1)], laneRoom(perConnection, keepUpCap, l, failures), `${perConnection} ${keepUpCap} ${JSON.stringify(l)} ${failures}`);
    }),
    { numRuns: 5000 },
  );
});

t.run();
