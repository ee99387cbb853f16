/** The self-contained HTML report of `compare --html` (inline CSS and SVG, no network, no script). */
import { readFileSync } from "node:fs";
import { describeSpec } from "../../config/describe.ts";
import { durationWords } from "../../config/units.ts";
import { escapeHtml, seriesChart } from "./chart.ts";
import type { RunResult } from "./measure.ts";
import { HEADINGS, rowCells } from "./table.ts";
import type { Zoom } from "./zoom.ts";
import { zoomChart } from "./zoom-chart.ts";

/** Inputs of the report. */
export interface ReportInput {
  title: string;
  results: RunResult[];
  limit: number;
  windowMs: number;
  bucketMs: number;
  events: number;
  /** The trace's first instant: time 0 on the charts' axes. */
  origin: number;
  /** The events around the highest rolling-window peak, for the zoomed chart. */
  zoom?: Zoom;
}

/** Results with the same columns, in run order: identical charts are drawn once, with every name on them. */
function sameColumns(results: RunResult[]): RunResult[][] {
  const groups = new Map<string, RunResult[]>();
  for (const r of results) {
    const id = JSON.stringify(r.series);
    const group = groups.get(id);
    if (group === undefined) groups.set(id, [r]);
    else group.push(r);
  }
  return [...groups.values()];
}

/** Why algorithms can decide alike at the nominal limit, for the ones a group holds. */
const ALIKE: Array<[string[], string]> = [
  [
    ["token-bucket", "gcra"],
    "gcra with a burst of N is this token bucket computed from one timestamp: the same admissions by design.",
  ],
  [
    ["token-bucket", "leaky-bucket"],
    "A leaky bucket of N drained at N per window admits what that token bucket admits; it delays instead (the delay column).",
  ],
  [
    ["fixed-window", "sliding-log"],
    "fixed-window parts from the sliding windows only where a burst straddles a window boundary (the zoom shows the busiest one).",
  ],
  [
    ["sliding-log", "sliding-window"],
    "sliding-window estimates sliding-log's exact count from two fixed windows: they part only when traffic within a window is uneven.",
  ],
  [
    ["sliding-log", "token-bucket"],
    "A full bucket of N and an empty window of N both admit N at once and refuse what follows at once; they part when requests are spread out (the bucket refills within the window).",
  ],
];

/** The sentences of {@link ALIKE} that apply to `names`, each once. */
function whyAlike(names: string[]): string {
  const reasons = ALIKE.filter(([pair]) => pair.every((a) => names.includes(a))).map(([, why]) => why);
  return [...new Set(reasons)].join(" ");
}

/** The zoom section: the chart, and what it shows in words (or why there is none). */
function zoomSection(input: ReportInput): string {
  const { zoom, results, limit, windowMs, origin } = input;
  if (zoom === undefined)
    return `<p class="lead">fixed-window admitted no request, so there is no peak to zoom in on.</p>`;
  const names = results.map((r) => r.spec.algorithm);
  const at = zoom.boundary - origin;
  const when = at >= 0 ? `${at} ms after the first event` : `${-at} ms before the first event`;
  const note = zoom.complete
    ? ""
    : " Some events of that span were too many to keep (the trace is dense): the counts drawn may be low.";
  return `<p class="lead">Key <code>${escapeHtml(zoom.key)}</code>, one window either side of the window boundary ${escapeHtml(when)}, across which fixed-window's peak/window of the table was first reached (a clock-aligned window can only be overrun across a boundary). Each panel draws the units its algorithm admitted in the rolling ${escapeHtml(
    durationWords(windowMs),
  )} before each instant; the dashed line is the limit (${limit}), and what rises above it is drawn red.${note}</p>
${zoomChart(zoom, names, limit)}`;
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
  const bucket = bucketMs >= 1000 && bucketMs % 1000 === 0 ? `${bucketMs / 1000} s` : `${bucketMs} ms`;
  const charts = sameColumns(results)
    .map((group) => {
      const names = group.map((r) => r.spec.algorithm);
      const first = group[0] as RunResult;
      const specs = group
        .map((r) => `<p class="spec">${escapeHtml(JSON.stringify(r.spec))} — ${escapeHtml(describeSpec(r.spec))}</p>`)
        .join("\n");
      // Why one chart stands for several: they differ, if at all, only within a column.
      const same =
        group.length === 1
          ? ""
          : `<p class="same">${escapeHtml(names.join(", "))} admitted and denied exactly as many requests in every ${escapeHtml(bucket)} column, so one chart stands for all ${group.length}. ${escapeHtml(whyAlike(names))}</p>\n`;
      return `<section class="algorithm" id="${first.spec.algorithm}" data-algorithms="${names.join(" ")}">
<h2>${escapeHtml(names.join(", "))}: ${first.admitted} admitted, ${first.denied} denied${group.length > 1 ? " each" : ""}</h2>
${specs}
${same}${seriesChart(`${names.join(", ")}: admitted and denied over time`, first.series, bucketMs, yMax, nominal)}
</section>`;
    })
    .join("\n");
  const summary = `${input.events} events from ${input.title}, through all six algorithms at a nominal limit of ${limit} per ${durationWords(windowMs)}.`;
  const fill: Record<string, string> = {
    TITLE: escapeHtml(input.title),
    SUMMARY: escapeHtml(summary),
    TABLE: `${head}\n<tbody>\n${body}\n</tbody>`,
    CHARTS: charts,
    ZOOM: zoomSection(input),
    BUCKET: escapeHtml(bucket),
  };
  return template.replace(/\{\{([A-Z]+)\}\}/g, (_, name: string) => fill[name] ?? "");
}
