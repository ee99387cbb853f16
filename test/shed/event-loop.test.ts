// Event-loop pressure on the real loop: a blocked loop makes loadShed shed its least critical
// levels (priority 0 still passes); the sampler never keeps a process alive.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { loadShed } from "sluice/http";
import { describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { within } from "../support/poll.ts";

const request = (priority: number) => new Request("http://x/", { headers: { "x-priority": String(priority) } });
const ok = () => new Response("ok");

/** Keeps the event loop busy for `ms` (a CPU-bound handler, a long JSON.parse). */
function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {}
}

describe("loadShed with maxEventLoopDelayMs", () => {
  it("sheds from the least critical level up while the loop is blocked, never priority 0", async () => {
    const shed = loadShed({
      maxEventLoopDelayMs: 20,
      sampleIntervalMs: 50,
      priority: (r) => Number((r as Request).headers.get("x-priority")),
    });
    try {
      expect((await shed(request(9), ok)).status).toBe(200);
      for (const more = within(); shed.stats().shedFromPriority > 7 && more(); ) {
        block(120);
        await new Promise((r) => setTimeout(r, 60));
      }
      const stats = shed.stats();
      expect(stats.shedFromPriority).toBeLessThanOrEqual(7);
      expect(stats.eventLoopDelayMs).toBeGreaterThan(0);
      expect(stats.limit).toBeUndefined();
      expect((await shed(request(9), ok)).status).toBe(503);
      expect((await shed(request(0), ok)).status).toBe(200);
      expect(shed.stats().shedByPriority[9]).toBe(1);
    } finally {
      shed.close();
    }
  });

  it("does not keep the process alive (the sampler's timer is unref'd)", () => {
    ensureBuilt();
    const script = `import { loadShed } from ${JSON.stringify(join(ROOT, "dist/http/index.js"))};
      loadShed({ maxEventLoopDelayMs: 50, maxEventLoopUtilization: 0.9, sampleIntervalMs: 10 });
      console.log("started");`;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(run.stdout.trim()).toBe("started");
    expect(run.status).toBe(0);
  });
});
