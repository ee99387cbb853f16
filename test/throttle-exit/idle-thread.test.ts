// A worker thread whose throttle on SharedMemoryStore is idle ends without `throttle.close()`, so
// its process exits (issue 32; the outside attack's finding 3: every worker stayed alive for good,
// its fleet queue's BroadcastChannel the only thing left). And the other side: a worker whose
// code ended while its jobs still wait for grants is not cut short: they all run first.
// Real threads on the built package; the bound only says "it exited".
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { runExitChild } from "../support/exit-child.ts";

const CHILD = fileURLToPath(new URL("./idle-thread-child.mjs", import.meta.url));

describe.concurrent("a throttle on SharedMemoryStore and its thread's life", () => {
  beforeAll(() => ensureBuilt());

  it("workers whose jobs are done end, throttles open, and the process exits", { timeout: 40_000 }, async () => {
    const r = await runExitChild(CHILD, ["await", "3", "6"]);
    expect(r.stderr).toBe("");
    expect({ code: r.code, report: r.report }).toEqual({ code: 0, report: { ran: [6, 6, 6], exits: [0, 0, 0] } });
  });

  it("a worker whose jobs wait for grants stays alive until they ran", { timeout: 40_000 }, async () => {
    // 2 workers × 6 jobs at 4 a second: most of them wait for a later window after the code ended.
    const r = await runExitChild(CHILD, ["fire", "2", "6"]);
    expect(r.stderr).toBe("");
    expect({ code: r.code, report: r.report }).toEqual({ code: 0, report: { ran: [6, 6], exits: [0, 0] } });
  });
});
