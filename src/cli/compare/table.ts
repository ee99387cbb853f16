/** The terminal table of `compare`: one row per algorithm, columns explained under it. */
import type { RunResult } from "./measure.ts";

function pct(part: number, whole: number): string {
  return whole === 0 ? "-" : `${((100 * part) / whole).toFixed(1)}%`;
}

/** The cells of one row (shared with the HTML report so both say the same thing). */
export function rowCells(r: RunResult, limit: number): string[] {
  const total = r.admitted + r.denied;
  const probed = r.retry.exact + r.retry.early + r.retry.late;
  return [
    r.spec.algorithm,
    String(r.admitted),
    String(r.denied),
    pct(r.admitted, total),
    `${r.peak} (${(r.peak / limit).toFixed(2)}×)`,
    probed === 0 ? "-" : pct(r.retry.exact, probed),
    String(r.retry.early),
    String(r.retry.late),
    r.delay.max === 0 ? "-" : `${Math.round(r.delay.mean)} / ${r.delay.max}`,
  ];
}

/** Column headings. */
export const HEADINGS = [
  "algorithm",
  "admitted",
  "denied",
  "admit %",
  "peak/window",
  "retry exact",
  "early",
  "late",
  "delay ms avg/max",
];

/** Formats the results as an aligned text table with a legend. */
export function formatTable(results: RunResult[], limit: number, windowMs: number, events: number): string {
  const rows = [HEADINGS, ...results.map((r) => rowCells(r, limit))];
  const widths = HEADINGS.map((_, c) => Math.max(...rows.map((row) => (row[c] as string).length)));
  const line = (row: string[]) =>
    row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c] as number) : cell.padStart(widths[c] as number))).join("  ");
  const out = [
    `${events} events, nominal limit ${limit} per ${windowMs} ms`,
    "",
    line(rows[0] as string[]),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...rows.slice(1).map(line),
    "",
    "peak/window: most admitted for one key in any rolling window of the nominal length (× the limit).",
    "retry exact: share of denied requests whose retryAfterMs is exactly when the same request passes;",
    "early: still refused at the hinted time; late: would already have passed 1 ms before it.",
  ];
  return `${out.join("\n")}\n`;
}
