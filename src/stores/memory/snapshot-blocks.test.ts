// A block on a rule without a ban lives beside the records (core/block.ts): a snapshot carries
// it, so a restart with the state file (`sluice serve --state`) keeps it until it ends.
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";

const T0 = Date.UTC(2026, 11, 1);
const SPEC = { algorithm: "fixed-window", limit: 3, windowMs: 1000 } as const;

describe("MemoryStore snapshots and blocks without a ban", () => {
  it.each([
    ["bound before restore", true],
    ["bound after restore", false],
  ])("a block survives snapshot and restore, then ends on time (%s)", (_name, bindFirst) => {
    const clock = new ManualClock(T0);
    const before = new MemoryStore();
    const a = createLimiter(SPEC, { clock, store: before, name: "api" });
    a.tryAcquire("k");
    a.block("k", 60_000);
    a.block("ended", 10);
    clock.set(T0 + 20);
    const text = before.snapshot(clock.now());
    const after = new MemoryStore();
    const early = bindFirst ? createLimiter(SPEC, { clock, store: after, name: "api" }) : undefined;
    after.restore(text);
    const b = early ?? createLimiter(SPEC, { clock, store: after, name: "api" });
    expect(b.tryAcquire("k")).toMatchObject({ allowed: false, banned: true, retryAfterMs: 59_980 });
    expect(b.tryAcquire("ended")).toMatchObject({ allowed: true, remaining: 2 });
    clock.set(T0 + 60_000);
    expect(b.tryAcquire("k")).toMatchObject({ allowed: true, remaining: 2 });
  });

  it("a snapshot's blocks are checked: a block that is not [key, instant] loads nothing", () => {
    const text = JSON.stringify({
      format: "sluice-memory-state",
      version: 1,
      savedAt: T0,
      tables: [{ id: "api", shape: "x", records: [], blocks: [["k", "soon"]] }],
    });
    expect(() => new MemoryStore().restore(text)).toThrow(/blocks/);
  });
});
