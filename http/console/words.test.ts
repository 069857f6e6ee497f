/**
 * The console's words for codes (`http/console/words.ts`): each code in words with the code beside
 * it, patterns of event names, one or many of a usage item, until when for calling hours, and a
 * code nobody wrote words for shown as it is (escaped).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { capWords, eventChoices, eventWords, idleWords, usageItem, usageItemText } from './words.ts';
import { EVENT_NAMES } from '../../shared/events.ts';

const t = suite('console words');
const s = (h: unknown) => String(h);

t('an event in words with its code; patterns read as groups; an unknown name as it is, escaped', () => {
  assert.is(s(eventWords('vd.call.answered')), 'A call was answered <code class="hint">vd.call.answered</code>');
  assert.is(s(eventWords('vd.call.*')), 'Every call event <code class="hint">vd.call.*</code>');
  assert.is(s(eventWords('vd.>')), 'Every event <code class="hint">vd.&gt;</code>');
  assert.is(s(eventWords('vd.<b>.x')), '<code>vd.&lt;b&gt;.x</code>');
  for (const n of EVENT_NAMES) assert.ok(!s(eventWords(n)).startsWith('<code>'), `${n} has words`);
});

t('usage items: many, or one for a quantity of 1; an item select reads the words', () => {
  assert.is(s(usageItem('call_minute', 12)), 'call minutes <code class="hint">call_minute</code>');
  assert.is(s(usageItem('qa_review', '1')), 'QA review <code class="hint">qa_review</code>');
  assert.is(usageItemText('list_verify'), 'numbers checked');
  assert.is(s(usageItem('unknown_item')), '<code>unknown_item</code>');
});

t('idle reasons: calling hours until a time (the viewer\'s zone, by the script); others without; an unknown code in words from its parts', () => {
  assert.is(s(idleWords('outside_calling_hours', '2026-11-29T13:00:00.000Z')), 'outside calling hours until <time datetime="2026-11-29T13:00:00.000Z">2026-11-29 13:00:00 UTC</time> <code class="hint">outside_calling_hours</code>');
  assert.is(s(idleWords('no_capacity', '2026-11-29T13:00:00.000Z')), 'no media node has room for another call <code class="hint">no_capacity</code>');
  assert.is(s(idleWords('some_new_reason')), 'some new reason <code class="hint">some_new_reason</code>');
  assert.is(s(capWords('abandon_cap')), 'abandonment cap <code class="hint">abandon_cap</code>');
});

t("the events a company picks from leave the operators' own out", () => {
  const list = s(eventChoices());
  assert.ok(list.includes('vd.call.placed') && list.includes('vd.platform.dialing_rules_changed'));
  for (const n of ['vd.platform.price_changed', 'vd.platform.node_online', 'vd.platform.operator_created', 'vd.platform.ai_settings_changed']) assert.not.ok(list.includes(n), n);
});

t.run();
