// A throttle's timers and the process's life, in real processes on the built package: queued
// work keeps the process alive until it has run (a wake-up timer is never unref'd), and an idle
// or closed throttle holds nothing open (lease renewals are unref'd; idle keys drop their timers).
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";

const SLUICE = pathToFileURL(join(ROOT, "dist", "index.js")).href;

/** Runs `code` (an ES module importing createThrottle) and returns its output; it must exit by itself. */
function run(code: string): { status: number | null; stdout: string; stderr: string; timedOut: boolean } {
  const r = spawnSync(
    process.execPath,
    ["--input-type=module", "-e", `import { createThrottle } from "${SLUICE}";\n${code}`],
    {
      encoding: "utf8",
      timeout: 30_000,
    },
  );
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, timedOut: r.error !== undefined };
}

describe("a throttle and the process's life", () => {
  beforeAll(() => ensureBuilt());

  it("queued jobs keep the process alive until they ran", () => {
    const r = run(`
      const t = createThrottle({ rate: { algorithm: "gcra", limit: 1, periodMs: 300, burst: 1 } });
      for (const n of [1, 2, 3]) t.schedule(() => console.log("ran", n));
    `);
    expect(r).toMatchObject({ status: 0, timedOut: false });
    expect(r.stdout).toBe("ran 1\nran 2\nran 3\n");
  });

  it("an idle throttle holds nothing open, leases and all", () => {
    const r = run(`
      const t = createThrottle({ concurrency: 1, leaseMs: 300, rate: { algorithm: "gcra", limit: 5, periodMs: 1000 } });
      await t.schedule(() => new Promise((resolve) => setTimeout(resolve, 400)));
      console.log("done", JSON.stringify(t.stats()));
    `);
    expect(r).toMatchObject({ status: 0, timedOut: false });
    expect(r.stdout).toBe('done {"queued":0,"running":0,"done":1,"failed":0,"expired":0}\n');
  });

  it("a closed throttle holds nothing open, even with a year-long wait queued", () => {
    const r = run(`
      const t = createThrottle({ rate: { algorithm: "fixed-window", limit: 1, windowMs: 365 * 24 * 3600 * 1000 } });
      await t.schedule(() => 1);
      const waiting = t.schedule(() => 2).catch((e) => console.log(e.code));
      await new Promise((resolve) => setTimeout(resolve, 100));
      console.log(JSON.stringify(t.stats()));
      await t.close();
      await waiting;
    `);
    expect(r).toMatchObject({ status: 0, timedOut: false });
    // The year-long wait did not overflow setTimeout into an immediate start.
    expect(r.stdout).toBe('{"queued":1,"running":0,"done":1,"failed":0,"expired":0}\nERR_THROTTLE_CLOSED\n');
  });
});
