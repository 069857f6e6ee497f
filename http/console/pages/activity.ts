/**
 * The console's charts of activity (issue 28), each a figure its page polls every 10 s while
 * visible (`data-poll`): the Dialing page's live calls and calls placed per 10 s over the last
 * hour, for the platform and the five busiest companies; a campaign's placed, answered and
 * abandoned per 10 s; a company's usage by month; a connection's webhook deliveries per hour.
 * The figures come from `control-plane/console/activity.ts`, the drawing from `../charts.ts`; the
 * routes are each page's own (with its guard).
 */
import { html } from 'hono/html';
import type { Store } from '../../env.ts';
import { campaignActivity, deliveriesByHour, dialingActivity, usageByMonth, type DialSeries } from '../../../control-plane/console/activity.ts';
import { chartFigure, chartSvg, clockUtc, type ChartSeries } from '../charts.ts';
import type { H } from '../layout.ts';

/** Six series told apart by colour and by dash, so neither alone carries the difference. */
const LINES: Array<{ color: string; dash?: string }> = [
  { color: '#1d2330' },
  { color: '#1f5fbf', dash: '6 3' },
  { color: '#b54708', dash: '2 2' },
  { color: '#067647', dash: '8 3 2 3' },
  { color: '#7a2e9e', dash: '4 4' },
  { color: '#b42318', dash: '1 3' },
];

const sum = (xs: Array<number | null>) => xs.reduce<number>((a, b) => a + (b ?? 0), 0);
const latest = (xs: Array<number | null>) => [...xs].reverse().find((v) => v !== null) ?? null;
const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/** The hour axis' labels (HH:MM UTC) and a tick on each whole 10 minutes. */
function hourAxis(at: number[]): { labels: string[]; ticks: number[]; times: number[] } {
  return { labels: at.map(clockUtc), ticks: at.flatMap((t, i) => (t % 600 === 0 ? [i] : [])), times: at };
}

/** The peak of `xs` and when, in words ("peak 8 at 21:40 UTC"), or '' when all are 0. */
function peak(xs: Array<number | null>, at: number[]): string {
  let best = -1;
  let top = 0;
  for (let i = 0; i < xs.length; i++) {
    const v = xs[i] ?? 0;
    if (v > top) [best, top] = [i, v];
  }
  return best < 0 ? '' : `, peak ${top} at ${clockUtc(at[best])} UTC`;
}

/** The Dialing page's two charts: live calls, and calls placed per 10 s, over the last hour. */
export async function dialingCharts(store: Store): Promise<H> {
  const a = await dialingActivity(store);
  const all: DialSeries[] = [a.platform, ...a.busiest];
  const line = (s: DialSeries, k: number, values: Array<number | null>): ChartSeries => ({ name: s.name, values, ...LINES[k] });
  const axis = hourAxis(a.at);
  const nowLive = (s: DialSeries) => `${s.name} ${latest(s.live) ?? '—'}`;
  const liveSummary =
    latest(a.platform.live) === null
      ? 'No live calls were sampled in the last hour.'
      : `Live calls now: ${all.map(nowLive).join('; ')}. All companies over the hour${peak(a.platform.live, a.at) || ': none'}.`;
  const placedSummary = `Calls placed in the last hour: ${all.map((s) => `${s.name} ${sum(s.placed).toLocaleString('en-US')}`).join('; ')}. All companies in the last 10 seconds: ${latest(a.platform.placed) ?? '—'}${peak(a.platform.placed, a.at)}.`;
  return chartFigure(
    'dialing-activity',
    '/console/dialing/activity',
    html`<h2>Live calls, last hour</h2>${chartSvg({ id: 'live-calls-chart', title: 'Live calls in the last hour, every 10 seconds', summary: liveSummary, ...axis, xLabel: 'Time (UTC)', yLabel: 'Live calls', kind: 'line', series: all.map((s, k) => line(s, k, s.live)) })}
<h2>Dial rate, last hour</h2>${chartSvg({ id: 'dial-rate-chart', title: 'Calls placed per 10 seconds in the last hour', summary: placedSummary, ...axis, xLabel: 'Time (UTC)', yLabel: 'Calls per 10 s', kind: 'line', series: all.map((s, k) => line(s, k, s.placed)) })}
<p class="muted">All companies and the five with the most live calls now. Sampled every 10 seconds; refreshed every 10 seconds while this page is visible.</p>`,
  );
}

/** A campaign's placed, answered and abandoned calls per 10 s over the last hour. */
export async function campaignChart(store: Store, tenantId: string, campaignId: string): Promise<H> {
  const a = await campaignActivity(store, tenantId, campaignId);
  const summary = `In the last hour: ${plural(sum(a.placed), 'call')} placed${peak(a.placed, a.at)}, ${sum(a.answered).toLocaleString('en-US')} answered, ${sum(a.abandoned).toLocaleString('en-US')} abandoned.`;
  return chartFigure(
    'campaign-activity',
    `/console/campaigns/${campaignId}/activity`,
    html`<h2>Calls per 10 seconds, last hour</h2>${chartSvg({
      id: 'campaign-chart',
      title: "The campaign's calls per 10 seconds in the last hour",
      summary,
      ...hourAxis(a.at),
      xLabel: 'Time (UTC)',
      yLabel: 'Calls per 10 s',
      kind: 'line',
      series: [
        { name: 'Placed', values: a.placed, ...LINES[1] },
        { name: 'Answered', values: a.answered, ...LINES[3] },
        { name: 'Abandoned', values: a.abandoned, ...LINES[5] },
      ],
    })}<p class="muted">Abandoned: answered calls nobody took within 2 seconds (or lost with their node after the answer), counted at their answer.</p>`,
  );
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A company's call minutes and AI minutes in each of the last 12 months. */
export async function usageChart(store: Store, tenantId: string): Promise<H> {
  const u = await usageByMonth(store, tenantId);
  const aiMinutes = u.ai_second.map((s) => Math.round((s / 60) * 100) / 100);
  const last = u.months.length - 1;
  const summary = `This month (${u.months[last]}): ${u.call_minute[last].toLocaleString('en-US')} call minutes, ${aiMinutes[last].toLocaleString('en-US')} AI minutes. Over the 12 months from ${u.months[0]}: ${sum(u.call_minute).toLocaleString('en-US')} call minutes, ${(Math.round(sum(aiMinutes) * 100) / 100).toLocaleString('en-US')} AI minutes.`;
  return chartFigure(
    'usage-chart',
    `/console/companies/${tenantId}/billing/usage-chart`,
    html`<h2>Usage by month, last 12 months</h2>${chartSvg({
      id: 'usage-by-month',
      title: 'Call minutes and AI minutes by month',
      summary,
      labels: u.months.map((m) => `${MONTHS[Number(m.slice(5)) - 1]} ${m.slice(2, 4)}`),
      ticks: u.months.map((_, i) => i),
      xLabel: 'Month',
      yLabel: 'Minutes',
      kind: 'bar',
      table: true,
      series: [
        { name: 'Call minutes', values: u.call_minute, color: '#1f5fbf' },
        { name: 'AI minutes', values: aiMinutes, color: '#b54708' },
      ],
    })}`,
  );
}

/** A connection's webhook deliveries per hour of the last 24: delivered, and failed (given up). */
export async function deliveriesChart(store: Store, tenantId: string, connectorId: string): Promise<H> {
  const d = await deliveriesByHour(store, tenantId, connectorId);
  const n = d.at.length - 1;
  const summary = `In the last 24 hours: ${sum(d.delivered).toLocaleString('en-US')} delivered, ${sum(d.failed).toLocaleString('en-US')} failed (given up after a day of retries). This hour: ${d.delivered[n]} delivered, ${d.failed[n]} failed.`;
  return chartFigure(
    'deliveries-chart',
    `/console/connections/${connectorId}/deliveries-chart`,
    html`<h2>Deliveries, last 24 hours</h2>${chartSvg({
      id: 'deliveries-by-hour',
      title: 'Webhook deliveries per hour: delivered and failed',
      summary,
      labels: d.at.map((t) => `${clockUtc(t)}`),
      times: d.at,
      ticks: d.at.flatMap((t, i) => ((t / 3600) % 3 === 0 ? [i] : [])),
      xLabel: 'Hour (UTC)',
      yLabel: 'Deliveries',
      kind: 'bar',
      table: true,
      series: [
        { name: 'Delivered', values: d.delivered, color: '#067647' },
        { name: 'Failed', values: d.failed, color: '#b42318' },
      ],
    })}`,
  );
}
