// A store allowed 1,000 rules holds 1,000 ordinary rules (attack F2, 2026-12-07): the default
// `ruleBytes` was a fixed 65,536, which holds about 680 named gcra rules (96 bytes of identity and
// spec each), so `maxRules: 1000` failed part-way with a StoreError from a decision. The default
// now follows maxRules (256 bytes a rule, params.ts). An explicit `ruleBytes` too small for the
// rules bound can only be known per rule (names and specs vary), so the error at bind names
// `ruleBytes`, `maxRules` and a figure to raise it to, and that figure holds the same rules.
import { createLimiter, ManualClock } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";

const spec = { algorithm: "gcra", limit: 10, periodMs: 60_000 } as const;

/** Binds `count` gcra rules named by `name(i)` and decides one request each; the allowed count. */
async function bindAll(store: SharedMemoryStore, count: number, name: (i: number) => string): Promise<number> {
  const clock = new ManualClock(1_700_000_000_000);
  let allowed = 0;
  for (let i = 0; i < count; i++) {
    const limiter = createLimiter(spec, { store, name: name(i), clock });
    if ((await limiter.tryAcquire("k")).allowed) allowed++;
  }
  return allowed;
}

describe("SharedMemoryStore rule texts follow maxRules", () => {
  it("maxRules 1,000 binds and decides 1,000 small rules with the default ruleBytes", async () => {
    const store = new SharedMemoryStore({ maxKeys: 4000, maxRules: 1000, seed: 1 });
    expect(await bindAll(store, 1000, (i) => `r${i}`)).toBe(1000);
    expect(store.stats().rules).toBe(1000);
  });

  it("maxRules 1,000 binds 1,000 rules with 46-character names", async () => {
    const store = new SharedMemoryStore({ maxKeys: 4000, maxRules: 1000, seed: 1 });
    const name = (i: number) => `api:v2:/users/:userId/orders:POST:tier-${String(i).padStart(7, "0")}`;
    expect(name(0)).toHaveLength(46);
    expect(await bindAll(store, 1000, name)).toBe(1000);
  });

  it("an explicit ruleBytes too small fails at bind naming ruleBytes, maxRules and a figure that holds them", async () => {
    const small = new SharedMemoryStore({ maxKeys: 4000, maxRules: 1000, ruleBytes: 65_536, seed: 1 });
    const error = await bindAll(small, 1000, (i) => `r${i}`).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(/`ruleBytes` 65536 is full with \d+ of `maxRules` 1000 rules/);
    const figure = Number(/`ruleBytes: (\d+)`/.exec(message)?.[1]);
    expect(figure).toBeGreaterThan(65_536);
    const raised = new SharedMemoryStore({ maxKeys: 4000, maxRules: 1000, ruleBytes: figure, seed: 1 });
    expect(await bindAll(raised, 1000, (i) => `r${i}`)).toBe(1000);
  });
});
