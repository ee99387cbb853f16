import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, run, tempDir } from "./helpers.ts";

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
    expect(page.match(/<svg class="chart"/g)).toHaveLength(6);
  });

  it("generates the same trace for the same seed and rejects bad flags", async () => {
    const a = await run(["compare", "--generate", "poisson", "--seed", "7", "--duration", "20s", "--json"]);
    const b = await run(["compare", "--generate", "poisson", "--seed", "7", "--duration", "20s", "--json"]);
    const c = await run(["compare", "--generate", "poisson", "--seed", "8", "--duration", "20s", "--json"]);
    expect(a.stdout).toBe(b.stdout);
    expect(a.stdout).not.toBe(c.stdout);
    expect((await run(["compare", "--generate", "zigzag"])).status).toBe(2);
    expect((await run(["compare", "--generate", "uniform", "--window", "fast"])).status).toBe(2);
    const empty = await run(["compare", "-"], "");
    expect(empty.status).toBe(1);
  });
});
