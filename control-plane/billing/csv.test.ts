/**
 * The CSV writer of the billing export, cell by cell: RFC 4180 quoting and formula neutralising
 * of text cells (every starting character the spec names, NUL included, which a company name in
 * the store cannot hold), numbers untouched; the whole file read back by csv-parse.
 */
import { parse } from 'csv-parse/sync';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { csvCell, toCsv } from './csv.ts';

test('text cells starting with = + - @ tab CR or NUL get a leading quote; others are left alone', () => {
  for (const start of ['=', '+', '-', '@', '\t', '\r', '\0']) {
    const text = `${start}SUM(A1)`;
    const cell = csvCell({ text });
    const back = parse(`${cell}\r\n`, { relaxQuotes: false })[0][0];
    assert.is(back, `'${text}`, JSON.stringify(start));
  }
  for (const text of ['plain', ' =not first', "'already", 'a=b', '1-2']) assert.is(csvCell({ text }), text);
  assert.is(csvCell({ text: null }), '');
  assert.is(csvCell({ text: '' }), '');
});

test('quotes only where RFC 4180 needs them: comma, quote, CR, LF; quotes doubled', () => {
  assert.is(csvCell({ text: 'a,b' }), '"a,b"');
  assert.is(csvCell({ text: 'say "hi"' }), '"say ""hi"""');
  assert.is(csvCell({ text: 'two\nlines' }), '"two\nlines"');
  assert.is(csvCell({ text: '=1,2' }), `"'=1,2"`);
  assert.is(csvCell({ text: 'Zürich 日本' }), 'Zürich 日本');
});

test('number cells are written as they are, a negative one too; anything else is refused', () => {
  assert.is(csvCell({ number: '-12.3400' }), '-12.3400');
  assert.is(csvCell({ number: '0' }), '0');
  for (const bad of ['=1', '1e5', '', '1,5', ' 1']) assert.throws(() => csvCell({ number: bad }), /not a number cell/);
});

test('a file: one header row, CRLF after every row, read back cell for cell', () => {
  const body = toCsv(['name', 'margin'], [[{ text: '@evil, "inc"\r\nx' }, { number: '-1.0000' }], [{ text: null }, { number: '2' }]]);
  assert.ok(body.endsWith('\r\n'));
  assert.equal(parse(body), [['name', 'margin'], ["'@evil, \"inc\"\r\nx", '-1.0000'], ['', '2']]);
});

test.run();
