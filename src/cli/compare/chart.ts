/**
 * Static SVG charts for the compare report: admitted (stacked under denied) per time bucket.
 * Drawn here rather than in browser script so the report opens anywhere, even with scripts off.
 */

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** Escapes text for HTML. */
export const escapeHtml = esc;

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
  const seconds = (n * bucketMs) / 1000;
  return `<svg class="chart" role="img" aria-label="${esc(title)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">
<line class="axis" x1="${left}" x2="${left}" y1="8" y2="${y(0)}"/><line class="axis" x1="${left}" x2="${width - 8}" y1="${y(0)}" y2="${y(0)}"/>
<text class="tick" x="${left - 4}" y="${y(yMax) + 4}" text-anchor="end">${yMax}</text><text class="tick" x="${left - 4}" y="${y(0)}" text-anchor="end">0</text>
<text class="tick" x="${left}" y="${height - 6}">0 s</text><text class="tick" x="${width - 8}" y="${height - 6}" text-anchor="end">${seconds.toFixed(1)} s</text>
${bars}${nominalLine}</svg>`;
}
