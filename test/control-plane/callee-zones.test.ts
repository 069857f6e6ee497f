/**
 * The callee's zones, resolved from the packages' data (no store): each source at its edge, the
 * order between them, the region rule, and the numbers whose zone cannot be told.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveCalleeZones, zonesOfNumber, type CalleeFacts } from '../../control-plane/compliance/callee-zones.ts';
import { loadScale } from '../support/eventually.ts';

const t = suite('callee zones');

/** A Chicago number: its own zone is never the answer below unless the number is the source. */
const CHICAGO = '+13125550161';
const of = (p: Partial<CalleeFacts>) => resolveCalleeZones({ phone_number: CHICAGO, timezone: null, postal_code: null, state: null, ...p });
const pair = (p: Partial<CalleeFacts>) => {
  const r = of(p);
  return r && { zones: [...r.zones], region: r.region };
};

t('the person\'s own timezone comes first; the region still comes from their ZIP', () => {
  assert.equal(pair({ timezone: 'Asia/Tokyo', postal_code: '32501', state: 'TX' }), { zones: ['Asia/Tokyo'], region: 'US-FL' });
  // An alias the runtime knows is kept as given.
  assert.equal(pair({ timezone: 'US/Eastern' }), { zones: ['US/Eastern'], region: 'US-IL' });
});

t('a ZIP in a state that spans two zones gives its own side of the line', () => {
  assert.equal(pair({ postal_code: '32501' }), { zones: ['America/Chicago'], region: 'US-FL' }); // Pensacola
  assert.equal(pair({ postal_code: '32301' }), { zones: ['America/New_York'], region: 'US-FL' }); // Tallahassee
  assert.equal(pair({ postal_code: '37201' }), { zones: ['America/Chicago'], region: 'US-TN' }); // Nashville
  assert.equal(pair({ postal_code: '37901', state: 'FL' }), { zones: ['America/New_York'], region: 'US-TN' }); // Knoxville; the ZIP beats the state
  assert.equal(pair({ postal_code: '97914' }), { zones: ['America/Boise'], region: 'US-OR' }); // Ontario, OR (Mountain)
  assert.equal(pair({ postal_code: '79901' }), { zones: ['America/Denver'], region: 'US-TX' }); // El Paso
  // ZIP+4, and a leading zero a spreadsheet dropped.
  assert.equal(pair({ postal_code: '02134-1234' }), { zones: ['America/New_York'], region: 'US-MA' });
  assert.equal(pair({ postal_code: '2134' }), { zones: ['America/New_York'], region: 'US-MA' });
  // Territories.
  assert.equal(pair({ postal_code: '00601' }), { zones: ['America/Puerto_Rico'], region: 'US-PR' });
  // Not a ZIP: the next source (here the number).
  assert.equal(pair({ postal_code: '99999' }), { zones: ['America/Chicago'], region: 'US-IL' });
  assert.equal(pair({ postal_code: 'SW1A 1AA' }), { zones: ['America/Chicago'], region: 'US-IL' });
});

t('a state that spans two zones keeps both', () => {
  const two: Record<string, string[]> = {
    FL: ['America/Chicago', 'America/New_York'],
    TN: ['America/Chicago', 'America/New_York'],
    TX: ['America/Chicago', 'America/Denver'],
    OR: ['America/Boise', 'America/Los_Angeles'],
    ID: ['America/Boise', 'America/Los_Angeles'],
    SD: ['America/Chicago', 'America/Denver'],
    NE: ['America/Chicago', 'America/Denver'],
    KS: ['America/Chicago', 'America/Denver'],
    MI: ['America/Detroit', 'America/Menominee'],
  };
  for (const [state, zones] of Object.entries(two)) assert.equal(pair({ state }), { zones, region: `US-${state}` }, state);
  // Indiana, Kentucky and North Dakota: every zone of their ZIPs, Central and Eastern (Mountain) among them.
  for (const [state, must] of [['IN', ['America/Chicago', 'America/Indiana/Indianapolis']], ['KY', ['America/Chicago', 'America/New_York']], ['ND', ['America/Chicago', 'America/Denver']]] as const) {
    const r = of({ state })!;
    for (const z of must) assert.ok(r.zones.includes(z), `${state} has ${z}: ${r.zones.join(',')}`);
    assert.equal([...r.zones], [...r.zones].sort());
  }
  // A name, in any case; a code not a state's falls through to the number.
  assert.equal(pair({ state: 'tennessee' }), pair({ state: 'TN' }));
  assert.equal(pair({ state: 'fl' }), pair({ state: 'FL' }));
  assert.equal(pair({ state: 'XX' }), { zones: ['America/Chicago'], region: 'US-IL' });
});

t('the number: an area code split by exchange, one Google gives two zones, and its state as the region', () => {
  // 850 is split exchange by exchange: Pensacola's is Central, Tallahassee's Eastern.
  assert.equal(pair({ phone_number: '+18504330000' }), { zones: ['America/Chicago'], region: 'US-FL' });
  assert.equal(pair({ phone_number: '+18502220000' }), { zones: ['America/New_York'], region: 'US-FL' });
  // 605 (South Dakota): an exchange Google does not place gets both of the area code's zones.
  assert.equal(pair({ phone_number: '+16052120000' }), { zones: ['America/Denver', 'America/North_Dakota/Center'], region: 'US-SD' });
  // The geocoder's own spellings of DC and Washington.
  assert.equal(of({ phone_number: '+12025550123' })?.region, 'US-DC');
  assert.equal(of({ phone_number: '+12065550123' })?.region, 'US-WA');
  // A territory's number.
  assert.equal(pair({ phone_number: '+17875550123' }), { zones: ['America/Puerto_Rico'], region: 'US-PR' });
});

t('a number of another country: its zones and country; a US ZIP or state on it is not read', () => {
  assert.equal(pair({ phone_number: '+442079460000' }), { zones: ['Europe/London'], region: 'GB' });
  assert.equal(pair({ phone_number: '+33612345678' }), { zones: ['Europe/Paris'], region: 'FR' });
  // 10115 is Berlin's postal code and a New York ZIP; DE is Germany and Delaware; CA Canada and California.
  assert.equal(pair({ phone_number: '+4930123456', postal_code: '10115', state: 'NY' }), { zones: ['Europe/Berlin'], region: 'DE' });
  assert.equal(pair({ phone_number: '+14165550123', postal_code: '90210', state: 'CA' }), { zones: ['America/Toronto'], region: 'CA' });
  // Its own timezone still counts.
  assert.equal(pair({ phone_number: '+442079460000', timezone: 'Europe/Dublin' }), { zones: ['Europe/Dublin'], region: 'GB' });
});

t('a number whose zone cannot be told: null (toll-free, or only the +1 plan as a whole)', () => {
  assert.is(of({ phone_number: '+18005550123' }), null);
  assert.is(of({ phone_number: '+18882345678' }), null);
  assert.is(zonesOfNumber('+18005550123'), null);
  // Not a valid number at all.
  assert.is(zonesOfNumber('+15550001'), null);
  // A ZIP or state still tells a toll-free callee's zone.
  assert.equal(pair({ phone_number: '+18005550123', postal_code: '32501' }), { zones: ['America/Chicago'], region: 'US-FL' });
  // An unknown zone name given as the timezone (stored before it was checked) is passed over.
  assert.equal(pair({ timezone: 'Mars/Olympus_Mons' }), { zones: ['America/Chicago'], region: 'US-IL' });
});

t('answers are shared: the same zones and region are one object with one key', () => {
  const a = of({ postal_code: '60601' })!;
  const b = of({ state: 'IL', phone_number: '+13125550199' });
  assert.is(a, of({ postal_code: '60602' }));
  assert.is(a.key, 'America/Chicago|US-IL');
  assert.is(zonesOfNumber(CHICAGO), a);
  assert.is(b, a); // Illinois spans one zone: the same answer, from another source
  assert.is.not(of({ postal_code: '32501' }), a);
  assert.ok(Object.isFrozen(a) && Object.isFrozen(a.zones));
});

t('resolving is quick once loaded (the list check resolves 200,000 people)', () => {
  of({});
  const n = 200_000;
  // The CPU time this process spent, not the wall clock: other processes on a busy machine
  // (the suite runs files side by side) stretch the wall clock, not the work done here.
  const started = process.cpuUsage();
  for (let i = 0; i < n; i++) of({ postal_code: i % 3 === 0 ? '32501' : null, state: i % 3 === 1 ? 'TX' : null, country: 'US' });
  const spent = process.cpuUsage(started);
  const perPerson = (spent.user + spent.system) / n;
  // A guard against a gross regression (a file read or a parse per person costs milliseconds), not
  // a speed figure (bench/list-check.bench.ts measures the list check): CPU time too stretches on
  // a machine with many more runnable processes than cores (27 µs at load 20 on 2 cores), so the
  // bound is stretched by the load as the suites' waits are.
  assert.ok(perPerson < 5 * loadScale(), `${perPerson.toFixed(2)} µs a person (load ×${loadScale().toFixed(1)})`);
});

t.run();
