/**
 * The console's charts (issue 28): SVG drawn by the server, so they need no script and no asset
 * from outside, and the CSP's `style-src 'self'` holds (presentation attributes only, no style).
 * A chart is a `<figure>` whose `<svg role="img">` is named by its `<title>` and described by a
 * `<desc>` that says its figures in words (also shown as the caption), with labelled axes; a chart
 * of a few points (months, hours) also carries its figures as a table under a disclosure.
 *
 * The legend is a list under the drawing, each series' mark beside its name.
 *
 * A line breaks where a point is null (no sample was taken); a point alone between gaps is drawn
 * as a dot. Bars of several series stand side by side in each point's slot.
 */
import { html, raw } from 'hono/html';
import type { H } from './layout.ts';

export type ChartSeries = { name: string; values: Array<number | null>; color: string; dash?: string };

export type Chart = {
  /** The figure's id (the svg's title and desc ids derive from it). */
  id: string;
  title: string;
  /** The figures in words: the svg's description and the figure's caption. */
  summary: string;
  /** Each point's label (the table's first column); `ticks` are those written under the axis. */
  labels: string[];
  ticks: number[];
  /**
   * Each point's time (Unix seconds) when the labels are UTC clock times: the console's script
   * then shows them, and the axis title, in the viewer's own time zone (`data-t`, `data-utc-axis`).
   */
  times?: number[];
  xLabel: string;
  yLabel: string;
  series: ChartSeries[];
  kind: 'line' | 'bar';
  /** The figures as a table too (for a few points). */
  table?: boolean;
};

const W = 640;
const H_ = 220;
const LEFT = 52;
const RIGHT = 12;
const TOP = 12;
const BOTTOM = 44;
const PW = W - LEFT - RIGHT;
const PH = H_ - TOP - BOTTOM;
const INK = '#5b6475';

/** The smallest 1, 2 or 5 × 10^k at or above `x` (at least 1): the y axis' top. */
export function niceMax(x: number): number {
  if (!(x > 1)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

const fmt = (n: number) => (Number.isInteger(n) ? n.toLocaleString('en-US') : n.toLocaleString('en-US', { maximumFractionDigits: 2 }));
const r1 = (n: number) => Math.round(n * 10) / 10;

/** The line of `values` as path data, broken at nulls; points alone between gaps come back as dots. */
export function linePath(values: Array<number | null>, x: (i: number) => number, y: (v: number) => number): { d: string; dots: Array<[number, number]> } {
  let d = '';
  const dots: Array<[number, number]> = [];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null) continue;
    const joined = i > 0 && values[i - 1] !== null;
    d += `${joined ? 'L' : 'M'}${r1(x(i))} ${r1(y(v))}`;
    if (!joined && (i === values.length - 1 || values[i + 1] === null)) dots.push([r1(x(i)), r1(y(v))]);
  }
  return { d, dots };
}

/** The chart as a figure (see the module's header). */
export function chartSvg(c: Chart): H {
  const n = c.labels.length;
  const max = niceMax(Math.max(0, ...c.series.flatMap((s) => s.values.filter((v): v is number => v !== null))));
  const y = (v: number) => TOP + PH - (v / max) * PH;
  const slot = PW / Math.max(1, n);
  const x = c.kind === 'bar' ? (i: number) => LEFT + slot * i + slot / 2 : (i: number) => LEFT + (n > 1 ? (PW * i) / (n - 1) : PW / 2);
  const yTicks = [0, max / 2, max];
  const marks = c.series.map((s, k) => {
    if (c.kind === 'bar') {
      const bw = (slot * 0.8) / c.series.length;
      return s.values
        .map((v, i) => (v ? `<rect x="${r1(LEFT + slot * i + slot * 0.1 + bw * k)}" y="${r1(y(v))}" width="${r1(Math.max(bw, 0.5))}" height="${r1(TOP + PH - y(v))}" fill="${s.color}"/>` : ''))
        .join('');
    }
    const { d, dots } = linePath(s.values, x, y);
    return `${d ? `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>` : ''}${dots.map(([cx, cy]) => `<circle cx="${cx}" cy="${cy}" r="2.5" fill="${s.color}"/>`).join('')}`;
  });
  const svg =
    `<line x1="${LEFT}" y1="${TOP + PH}" x2="${W - RIGHT}" y2="${TOP + PH}" stroke="${INK}"/><line x1="${LEFT}" y1="${TOP}" x2="${LEFT}" y2="${TOP + PH}" stroke="${INK}"/>` +
    yTicks.map((v) => `<line x1="${LEFT - 4}" y1="${r1(y(v))}" x2="${W - RIGHT}" y2="${r1(y(v))}" stroke="#d9dde5"/><text x="${LEFT - 6}" y="${r1(y(v) + 4)}" font-size="11" text-anchor="end" fill="${INK}">${fmt(v)}</text>`).join('') +
    c.ticks.map((i) => `<text x="${r1(x(i))}" y="${TOP + PH + 15}" font-size="11" text-anchor="middle" fill="${INK}"${c.times ? ` data-t="${c.times[i]}"` : ''}>${escapeText(c.labels[i])}</text>`).join('') +
    `<text x="${LEFT + PW / 2}" y="${H_ - 6}" font-size="11" text-anchor="middle" fill="${INK}"${c.times ? ' data-utc-axis=""' : ''}>${escapeText(c.xLabel)}</text>` +
    `<text transform="translate(13 ${TOP + PH / 2}) rotate(-90)" font-size="11" text-anchor="middle" fill="${INK}">${escapeText(c.yLabel)}</text>` +
    marks.join('');
  return html`<svg role="img" aria-labelledby="${c.id}-title ${c.id}-desc" viewBox="0 0 ${W} ${H_}" width="100%" preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg"><title id="${c.id}-title">${c.title}</title><desc id="${c.id}-desc">${c.summary}</desc>${raw(svg)}</svg>
<ul class="legend">${c.series.map((s) => html`<li>${raw(swatch(c.kind, s))} ${s.name}</li>`)}</ul>
<figcaption>${c.summary}</figcaption>${
    c.table
      ? html`<details><summary>The figures of ${c.title.toLowerCase()}</summary><div class="table-wrap"><table><thead><tr><th>${c.xLabel}</th>${c.series.map((s) => html`<th class="num">${s.name}</th>`)}</tr></thead><tbody>${c.labels.map(
          (l, i) => html`<tr><td>${c.times ? html`<time datetime="${new Date(c.times[i] * 1000).toISOString()}" data-clock="">${l}</time>` : l}</td>${c.series.map((s) => html`<td class="num">${s.values[i] === null ? '—' : fmt(s.values[i]!)}</td>`)}</tr>`,
        )}</tbody></table></div></details>`
      : ''
  }`;
}

/** A series' mark in small, for the legend (hidden from assistive technology: the name follows it). */
function swatch(kind: Chart['kind'], s: ChartSeries): string {
  const mark = kind === 'bar' ? `<rect x="2" y="1" width="12" height="10" fill="${s.color}"/>` : `<line x1="0" y1="6" x2="16" y2="6" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`;
  return `<svg width="16" height="12" viewBox="0 0 16 12" aria-hidden="true" focusable="false">${mark}</svg>`;
}

/** Text for inside the SVG built as a string (`&`, `<`, `>` and quotes escaped). */
function escapeText(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** `HH:MM` in UTC of a Unix time in seconds. */
export const clockUtc = (t: number) => new Date(t * 1000).toISOString().slice(11, 16);

/** The polling wrapper of a chart: refreshed from `path` every 10 s while the page is visible. */
export function chartFigure(id: string, path: string, inner: H): H {
  return html`<figure id="${id}" class="chart" hx-get="${path}" hx-trigger="poll" hx-swap="outerHTML" data-poll="10">${inner}</figure>`;
}
