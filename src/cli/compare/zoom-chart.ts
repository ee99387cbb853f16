/**
 * The zoomed chart of the compare report: one panel per algorithm over the two windows around
 * the busiest boundary, each drawing the units it admitted in the rolling window (t − W, t]
 * against the nominal limit, so a boundary burst past the limit (fixed-window's 2×) is seen,
 * not only read in the table. Static SVG, like the other charts.
 */
import { escapeHtml as esc, niceStep, timeTicks } from "./chart.ts";
import { rollingCounts, type Zoom } from "./zoom.ts";

const WIDTH = 720;
const LEFT = 44;
const RIGHT = 8;
const TOP = 16;
const PANEL = 62;
const LABEL = 16;
const GAP = 8;
const AXIS = 30;

/** Renders the zoom for `names` (the algorithms in run order); the axis reads time from the boundary. */
export function zoomChart(zoom: Zoom, names: string[], limit: number): string {
  const w = zoom.windowMs;
  const from = zoom.boundary - w;
  const to = zoom.boundary + w;
  const series = names.map((_, i) => rollingCounts(zoom, i, from, to));
  const highest = Math.max(limit, ...series.flatMap((s) => s.map(([, c]) => c)));
  const yMax = niceStep(highest, 1); // the round number at or above the highest count
  const plotW = WIDTH - LEFT - RIGHT;
  const height = TOP + names.length * (LABEL + PANEL + GAP) + AXIS;
  const x = (t: number) => LEFT + ((t - from) / (to - from)) * plotW;
  const bottomOf = (i: number) => TOP + i * (LABEL + PANEL + GAP) + LABEL + PANEL;
  const panels = names.map((name, i) => {
    const base = bottomOf(i);
    const y = (v: number) => base - (v / yMax) * PANEL;
    const points = series[i] as Array<[number, number]>;
    let d = `M${x(from).toFixed(1)},${y(0).toFixed(1)}`;
    points.forEach(([t, c], j) => {
      const next = j + 1 < points.length ? (points[j + 1] as [number, number])[0] : to;
      d += `L${x(t).toFixed(1)},${y(c).toFixed(1)}L${x(next).toFixed(1)},${y(c).toFixed(1)}`;
    });
    d += `L${x(to).toFixed(1)},${y(0).toFixed(1)}Z`;
    const most = Math.max(...points.map(([, c]) => c));
    const over = most > limit;
    // The part above the limit, drawn again in the denied colour (clipped to above the line).
    const clip = `zoom-over-${i}`;
    return `<g class="panel" data-algorithm="${esc(name)}" data-max="${most}">
<text class="panel-label" x="${LEFT}" y="${base - PANEL - 4}">${esc(name)}: here at most ${most} in a rolling ${w} ms (${(most / limit).toFixed(2)}× the limit)</text>
<line class="axis" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${base}" y2="${base}"/>
<text class="tick" x="${LEFT - 4}" y="${base}" text-anchor="end">0</text><text class="tick" x="${LEFT - 4}" y="${(y(yMax) + 8).toFixed(1)}" text-anchor="end">${yMax}</text>
<path class="rolling" d="${d}"/>${over ? `<clipPath id="${clip}"><rect x="${LEFT}" y="${y(yMax).toFixed(1)}" width="${plotW}" height="${(y(limit) - y(yMax)).toFixed(1)}"/></clipPath><path class="rolling-over" clip-path="url(#${clip})" d="${d}"/>` : ""}
<line class="nominal" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${y(limit).toFixed(1)}" y2="${y(limit).toFixed(1)}"><title>the limit: ${limit} per ${w} ms</title></line>
<text class="tick limit-label" x="${LEFT + 2}" y="${(y(limit) - 3).toFixed(1)}">limit ${limit}</text>
</g>`;
  });
  const axisY = bottomOf(names.length - 1);
  const ticks = timeTicks(from, to, zoom.boundary, 10)
    .map(({ at, label }) => {
      const text = at === zoom.boundary ? "0 s" : at > zoom.boundary ? `+${label}` : label.replace("-", "−");
      return `<line class="axis" x1="${x(at).toFixed(1)}" x2="${x(at).toFixed(1)}" y1="${axisY}" y2="${axisY + 4}"/><text class="tick x-tick" x="${x(at).toFixed(1)}" y="${axisY + 16}" text-anchor="middle">${text}</text>`;
    })
    .join("");
  const bx = x(zoom.boundary).toFixed(1);
  return `<svg class="chart zoom" role="img" aria-label="units admitted in a rolling window, one window either side of a window boundary" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" xmlns="http://www.w3.org/2000/svg">
<line class="boundary" x1="${bx}" x2="${bx}" y1="${TOP - 4}" y2="${axisY}"/><text class="tick boundary-label" x="${bx}" y="${TOP - 6}" text-anchor="middle">window boundary</text>
${panels.join("\n")}
${ticks}<text class="tick axis-label" x="${WIDTH - RIGHT}" y="${height - 2}" text-anchor="end">time from the window boundary</text>
</svg>`;
}
