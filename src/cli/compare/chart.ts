/**
 * Static SVG charts for the compare report: admitted (stacked under denied) per time bucket.
 * Drawn here rather than in browser script so the report opens anywhere, even with scripts off.
 */

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** Escapes text for HTML. */
export const escapeHtml = esc;

/** A round step (1, 2 or 5 × a power of ten) giving about `target` steps over `span`. */
export function niceStep(span: number, target: number): number {
  const raw = Math.max(span, 1e-9) / target;
  const p = 10 ** Math.floor(Math.log10(raw));
  return ([1, 2, 5, 10].map((f) => f * p).find((v) => v >= raw) ?? 10 * p) as number;
}

/** Seconds with as many decimals as `stepMs` needs (at most 3): 0.25 s steps read "1.25 s". */
export function secondsLabel(ms: number, stepMs: number): string {
  let decimals = 0;
  while (
    decimals < 3 &&
    Math.abs(Math.round((stepMs / 1000) * 10 ** decimals) - (stepMs / 1000) * 10 ** decimals) > 1e-9
  ) {
    decimals++;
  }
  return `${(ms / 1000).toFixed(decimals)} s`;
}

/** Tick instants over [from, to] every round step (about `target` of them), labelled as time since `origin`. */
export function timeTicks(
  from: number,
  to: number,
  origin: number,
  target: number,
): Array<{ at: number; label: string }> {
  const step = niceStep(to - from, target);
  const ticks: Array<{ at: number; label: string }> = [];
  for (let t = Math.ceil((from - origin) / step) * step; origin + t <= to + 1e-9; t += step) {
    ticks.push({ at: origin + t, label: secondsLabel(t, step) });
  }
  return ticks;
}

/** An SVG column chart of one algorithm's series; `yMax` is shared so charts compare by eye. */
export function seriesChart(
  title: string,
  series: Array<[number, number]>,
  bucketMs: number,
  yMax: number,
  nominal: number,
): string {
  const width = 720;
  const height = 180;
  const left = 44;
  const bottom = 22;
  const plotW = width - left - 8;
  const plotH = height - bottom - 8;
  const n = Math.max(1, series.length);
  const barW = plotW / n;
  const y = (v: number) => 8 + plotH - (v / Math.max(1, yMax)) * plotH;
  const bars = series
    .map(([a, d], i) => {
      const x = left + i * barW;
      const w = Math.max(0.5, barW - (barW > 3 ? 1 : 0));
      const from = (i * bucketMs) / 1000;
      const tip = `<title>${from.toFixed(1)}–${(from + bucketMs / 1000).toFixed(1)} s: ${a} admitted, ${d} denied</title>`;
      return (
        `<g>${tip}<rect class="admitted" x="${x.toFixed(1)}" y="${y(a).toFixed(1)}" width="${w.toFixed(1)}" height="${(y(0) - y(a)).toFixed(1)}"/>` +
        `<rect class="denied" x="${x.toFixed(1)}" y="${y(a + d).toFixed(1)}" width="${w.toFixed(1)}" height="${(y(a) - y(a + d)).toFixed(1)}"/></g>`
      );
    })
    .join("");
  const nominalLine =
    nominal <= yMax
      ? `<line class="nominal" x1="${left}" x2="${width - 8}" y1="${y(nominal).toFixed(1)}" y2="${y(nominal).toFixed(1)}"><title>nominal limit per bucket: ${nominal.toFixed(1)}</title></line>`
      : "";
  const spanMs = n * bucketMs;
  const xTicks = timeTicks(0, spanMs, 0, 8)
    .map(({ at, label }) => {
      const x = left + (at / spanMs) * plotW;
      const anchor = at === 0 ? "start" : "middle";
      return `<line class="axis" x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${y(0)}" y2="${y(0) + 4}"/><text class="tick x-tick" x="${x.toFixed(1)}" y="${height - 6}" text-anchor="${anchor}">${label}</text>`;
    })
    .join("");
  return `<svg class="chart" role="img" aria-label="${esc(title)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">
<line class="axis" x1="${left}" x2="${left}" y1="8" y2="${y(0)}"/><line class="axis" x1="${left}" x2="${width - 8}" y1="${y(0)}" y2="${y(0)}"/>
<text class="tick" x="${left - 4}" y="${y(yMax) + 4}" text-anchor="end">${yMax}</text><text class="tick" x="${left - 4}" y="${y(0)}" text-anchor="end">0</text>
${xTicks}
${bars}${nominalLine}</svg>`;
}
