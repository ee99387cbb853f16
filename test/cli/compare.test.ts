import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, run, runIn, tempDir } from "./helpers.ts";

const tmp = tempDir();
beforeAll(ensureBuilt);
afterAll(tmp.cleanup);

interface Row {
  spec: { algorithm: string };
  admitted: number;
  denied: number;
  peak: number;
  retry: { exact: number; early: number; late: number; never: number };
}

describe("sluice compare", () => {
  it("shows the fixed-window boundary burst at 2× and every other algorithm at the limit", async () => {
    const r = await run([
      "compare",
      "--generate",
      "boundary",
      "--limit",
      "10",
      "--window",
      "1s",
      "--duration",
      "10s",
      "--json",
    ]);
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as { events: number; results: Row[] };
    expect(out.events).toBe(100);
    const by = Object.fromEntries(out.results.map((x) => [x.spec.algorithm, x]));
    expect(Object.keys(by)).toEqual([
      "fixed-window",
      "sliding-log",
      "sliding-window",
      "token-bucket",
      "gcra",
      "leaky-bucket",
    ]);
    expect(by["fixed-window"]?.peak).toBe(20);
    expect(by["sliding-log"]?.peak).toBe(10);
    for (const row of out.results) {
      expect(row.admitted + row.denied).toBe(100);
      expect(row.retry.early).toBe(0); // a client that obeys a hint is never refused again
    }
  });

  it("prints a table per algorithm for a trace file and writes a self-contained HTML report", async () => {
    const trace = tmp.file("t.csv", Array.from({ length: 300 }, (_, i) => `${i * 20},k`).join("\n"));
    const html = join(tmp.dir, "report.html");
    const r = await run(["compare", trace, "--limit", "5", "--window", "1s", "--html", html]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^algorithm\s+admitted\s+denied/m);
    for (const name of ["fixed-window", "sliding-log", "sliding-window", "token-bucket", "gcra", "leaky-bucket"]) {
      expect(r.stdout).toMatch(new RegExp(`^${name}\\s+\\d+\\s+\\d+`, "m"));
    }
    const page = readFileSync(html, "utf8");
    expect(page).not.toMatch(/(src|href)="https?:/);
    // One chart per distinct pattern of columns (each algorithm named on exactly one), and the zoom.
    const sections = [...page.matchAll(/data-algorithms="([^"]+)"/g)].map((m) => (m[1] as string).split(" "));
    expect(sections.flat().sort()).toEqual(
      ["fixed-window", "sliding-log", "sliding-window", "token-bucket", "gcra", "leaky-bucket"].sort(),
    );
    expect(page.match(/<svg class="chart"/g)).toHaveLength(sections.length);
    expect(page.match(/<svg class="chart zoom"/g)).toHaveLength(1);
  });

  it("the report's zoom shows the boundary burst: fixed-window at 2× the limit in a rolling window, the others at it", async () => {
    const html = join(tmp.dir, "boundary.html");
    const r = await run(["compare", "--generate", "boundary", "--limit", "10", "--duration", "10s", "--html", html]);
    expect(r.status).toBe(0);
    const page = readFileSync(html, "utf8");
    const panels = Object.fromEntries(
      [...page.matchAll(/<g class="panel" data-algorithm="([^"]+)" data-max="(\d+)">/g)].map((m) => [
        m[1],
        Number(m[2]),
      ]),
    );
    expect(panels).toEqual({
      "fixed-window": 20,
      "sliding-log": 10,
      "sliding-window": 10,
      "token-bucket": 10,
      gcra: 10,
      "leaky-bucket": 10,
    });
    expect(page).toContain("window boundary 1 ms after the first event");
    // The five that decide alike on this trace share one chart, and the report says why.
    expect(page).toContain('data-algorithms="sliding-log sliding-window token-bucket gcra leaky-bucket"');
    expect(page).toMatch(
      /admitted and denied exactly as many requests in every \d+ ms column, so one chart stands for all 5/,
    );
  });

  it("generates the same trace for the same seed and rejects bad flags", async () => {
    // In-process (runIn): six child processes took most of the timeout on a loaded machine.
    const a = await runIn(["compare", "--generate", "poisson", "--seed", "7", "--duration", "20s", "--json"]);
    const b = await runIn(["compare", "--generate", "poisson", "--seed", "7", "--duration", "20s", "--json"]);
    const c = await runIn(["compare", "--generate", "poisson", "--seed", "8", "--duration", "20s", "--json"]);
    expect(a.status).toBe(0);
    expect(a.stdout).toBe(b.stdout);
    expect(a.stdout).not.toBe(c.stdout);
    expect((await runIn(["compare", "--generate", "zigzag"])).status).toBe(2);
    expect((await runIn(["compare", "--generate", "uniform", "--window", "fast"])).status).toBe(2);
    const empty = await runIn(["compare", "-"], "");
    expect(empty.status).toBe(1);
    expect(empty.stderr).toContain("stdin: the trace has no events");
  });

  it("does work linear in the trace: at most 3 steps per event per algorithm, 4× the events for 4× the time", async () => {
    const measure = async (duration: string) => {
      const r = await runIn(["compare", "--generate", "poisson", "--duration", duration, "--json"]);
      expect(r.status).toBe(0);
      return JSON.parse(r.stdout) as { events: number; results: Array<Row & { steps: number }> };
    };
    const ten = await measure("10m");
    const forty = await measure("40m");
    // The default rate is 1.5× the limit (15/s): about 36,000 events in 40 minutes.
    expect(forty.events).toBeGreaterThan(34_000);
    for (const out of [ten, forty]) {
      for (const row of out.results) {
        expect(row.admitted + row.denied).toBe(out.events);
        // One decision per event, two peeks per denial with a finite hint.
        expect(row.steps).toBe(out.events + 2 * (row.denied - row.retry.never));
        expect(row.steps).toBeLessThanOrEqual(3 * out.events);
      }
    }
    const ratio = (forty.results[0]?.steps ?? 0) / (ten.results[0]?.steps ?? 1);
    expect(ratio).toBeGreaterThan(3.5);
    expect(ratio).toBeLessThan(4.5);
  });

  it("refuses extreme inputs with a clear error naming the file and line, or the flag", async () => {
    const far = await runIn(["compare", "-"], '{"at":1e308}\n{"at":-1e308}\n');
    expect(far.status).toBe(1);
    expect(far.stderr).toBe("sluice: stdin:1: the timestamp must be within ±8.64e15 ms, the Date range (got 1e+308)\n");
    const path = tmp.file("far.csv", "0,a\n-9000000000000000,a\n");
    const csv = await runIn(["compare", path]);
    expect(csv.status).toBe(1);
    expect(csv.stderr).toContain(`${path}:2: the timestamp must be within`);
    // Both ends of the Date range in one trace: decided, charted in at most 240 columns.
    const wide = await runIn(["compare", "-", "--json"], '{"at":8.64e15}\n{"at":-8.64e15}\n{"at":0}\n');
    expect(wide.status).toBe(0);
    expect(JSON.parse(wide.stdout).events).toBe(3);
    const huge = await runIn(["compare", "--generate", "poisson", "--limit", "9007199254740991"]);
    expect(huge.status).toBe(2);
    expect(huge.stderr).toContain("--limit must be at most 1,000,000,000");
    const many = await runIn(["compare", "--generate", "uniform", "--rate", "1000000/s", "--duration", "1h"]);
    expect(many.status).toBe(2);
    expect(many.stderr).toContain("would make about 3,600,000,000 events, more than 10,000,000");
    const boundary = await runIn(["compare", "--generate", "boundary", "--limit", "1000000000", "--duration", "1h"]);
    expect(boundary.status).toBe(2);
  });
});
