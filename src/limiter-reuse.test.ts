// Two unnamed limiters with the same spec on one store share one budget (docs/stores.md): a
// likely mistake, reported once per identity and store with the SLUICE_LIMITER_REUSE warning.
import { describe, expect, it } from "vitest";
import { warningsOf } from "../test/support/warnings.ts";
import { ManualClock } from "./core/clock.ts";
import { createLimiter } from "./limiter.ts";
import { MemoryStore } from "./stores/memory/memory-store.ts";

const NOW = Date.UTC(2026, 11, 1);
const SPEC = { algorithm: "fixed-window", limit: 2, windowMs: 60_000 } as const;

/** The codes of the warnings `fn` emits. */
const warningCodes = async (fn: () => void) => (await warningsOf(fn)).map((w) => w.code);

describe("SLUICE_LIMITER_REUSE", () => {
  it("warns once when unnamed limiters with one spec share a store, and they do share its budget", async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(NOW);
    const a = createLimiter(SPEC, { store, clock });
    let b = a;
    const codes = await warningCodes(() => {
      b = createLimiter(SPEC, { store, clock });
      createLimiter({ ...SPEC }, { store, clock }); // a third: the warning is not repeated
    });
    expect(codes).toEqual(["SLUICE_LIMITER_REUSE"]);
    expect((await a.tryAcquire("k")).allowed).toBe(true);
    expect((await b.tryAcquire("k")).allowed).toBe(true);
    expect((await a.tryAcquire("k")).allowed).toBe(false); // one budget of 2, spent by both
  });

  it("stays silent for named limiters, different specs, and the same spec on different stores", async () => {
    const store = new MemoryStore();
    const codes = await warningCodes(() => {
      createLimiter(SPEC, { store, name: "login" });
      createLimiter(SPEC, { store, name: "login" }); // the same name shares on purpose
      createLimiter(SPEC, { store, name: "search" });
      createLimiter(SPEC, { store });
      createLimiter({ ...SPEC, limit: 3 }, { store });
      createLimiter(SPEC, { store: new MemoryStore() });
      createLimiter(SPEC); // each limiter without a store gets its own
      createLimiter(SPEC);
    });
    expect(codes).toEqual([]);
  });
});
