/** The self-contained HTML report of `compare --html` (inline CSS and SVG, no network, no script). */
import { readFileSync } from "node:fs";
import { describeSpec } from "../../config/describe.ts";
import { durationWords } from "../../config/units.ts";
import { escapeHtml, seriesChart } from "./chart.ts";
import type { RunResult } from "./measure.ts";
import { HEADINGS, rowCells } from "./table.ts";

/** Inputs of the report. */
export interface ReportInput {
  title: string;
  results: RunResult[];
  limit: number;
  windowMs: number;
  bucketMs: number;
  events: number;
}

/** Renders the report as one HTML string. */
export function renderReport(input: ReportInput): string {
  const template = readFileSync(new URL("./report.html", import.meta.url), "utf8");
  const { results, limit, windowMs, bucketMs } = input;
  const head = `<thead><tr>${HEADINGS.map((h) => `<th>${escapeHtml(h)}</th>`).join("")}</tr></thead>`;
  const body = results
    .map(
      (r) =>
        `<tr data-algorithm="${r.spec.algorithm}">${rowCells(r, limit)
          .map((c) => `<td>${escapeHtml(c)}</td>`)
          .join("")}</tr>`,
    )
    .join("\n");
  const yMax = Math.max(1, ...results.flatMap((r) => r.series.map(([a, d]) => a + d)));
  const nominal = (limit * bucketMs) / windowMs;
  const charts = results
    .map(
      (r) => `<section class="algorithm" id="${r.spec.algorithm}">
<h2>${r.spec.algorithm}: ${r.admitted} admitted, ${r.denied} denied</h2>
<p class="spec">${escapeHtml(JSON.stringify(r.spec))} — ${escapeHtml(describeSpec(r.spec))}</p>
${seriesChart(`${r.spec.algorithm}: admitted and denied over time`, r.series, bucketMs, yMax, nominal)}
</section>`,
    )
    .join("\n");
  const summary = `${input.events} events from ${input.title}, through all six algorithms at a nominal limit of ${limit} per ${durationWords(windowMs)}.`;
  const fill: Record<string, string> = {
    TITLE: escapeHtml(input.title),
    SUMMARY: escapeHtml(summary),
    TABLE: `${head}\n<tbody>\n${body}\n</tbody>`,
    CHARTS: charts,
    BUCKET: escapeHtml(bucketMs >= 1000 && bucketMs % 1000 === 0 ? `${bucketMs / 1000} s` : `${bucketMs} ms`),
  };
  return template.replace(/\{\{([A-Z]+)\}\}/g, (_, name: string) => fill[name] ?? "");
}
