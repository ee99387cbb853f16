// acquire() on a concurrency rule, woken by releases in this process (src/acquire.ts): a waiter
// takes a slot the moment a release in this process frees it, whichever limiter of the rule
// released it, with no poll on a MemoryStore (every release there is seen) and the clock never
// moved past the holder's lease. ManualClock: a waiter that depended on a timer would never wake.
import { createLimiter, type Decision, ManualClock, MemoryStore, WaitTimeoutError } from "sluice";
import { describe, expect, it } from "vitest";

const T = 1_765_000_000_000;
const spec = { algorithm: "concurrency", limit: 1, leaseMs: 60_000 } as const;
/** Lets queued promise callbacks and timers of 0 ms run. */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
};

describe("acquire() is woken by releases in this process", () => {
  it("a release through another limiter of the same rule wakes the waiter", async () => {
    const clock = new ManualClock(T);
    const store = new MemoryStore();
    const a = createLimiter(spec, { clock, store, name: "w" });
    const b = createLimiter(spec, { clock, store, name: "w" });
    const held = b.tryAcquire("k");
    let got: Decision | undefined;
    const waiting = a.acquire("k").then((d) => (got = d));
    await settle();
    expect(got).toBeUndefined();
    (held.release as () => Decision)();
    await settle();
    expect(got?.allowed).toBe(true);
    expect(got?.at).toBe(T);
    await waiting;
  });

  it("waiters are served in arrival order, one per release; a reset frees them all", async () => {
    const clock = new ManualClock(T);
    const limiter = createLimiter(spec, { clock });
    const held = limiter.tryAcquire("k");
    const order: string[] = [];
    const grants: Decision[] = [];
    const waiters = ["first", "second", "third"].map((name) =>
      limiter.acquire("k").then((d) => {
        order.push(name);
        grants.push(d);
      }),
    );
    await settle();
    expect(order).toEqual([]);
    (held.release as () => Decision)();
    await settle();
    expect(order).toEqual(["first"]);
    ((grants[0] as Decision).release as () => Decision)();
    await settle();
    expect(order).toEqual(["first", "second"]);
    limiter.reset("k");
    await settle();
    expect(order).toEqual(["first", "second", "third"]);
    await Promise.all(waiters);
  });

  it("a lease that is never released: the waiter gets the slot when it expires, or gives up at maxWaitMs", async () => {
    const clock = new ManualClock(T);
    const limiter = createLimiter({ ...spec, leaseMs: 1000 }, { clock });
    limiter.tryAcquire("k");
    const late = limiter.acquire("k", { maxWaitMs: 500 }).then(
      () => "acquired",
      (error: Error) => (error instanceof WaitTimeoutError ? "timeout" : String(error)),
    );
    let got: Decision | undefined;
    const waiting = limiter.acquire("k").then((d) => (got = d));
    await settle();
    clock.advance(500);
    await settle();
    expect(await late).toBe("timeout");
    expect(got).toBeUndefined();
    clock.advance(500);
    await settle();
    expect(got?.allowed).toBe(true);
    await waiting;
  });

  it("an abort ends the wait with the signal's reason", async () => {
    const clock = new ManualClock(T);
    const limiter = createLimiter(spec, { clock });
    limiter.tryAcquire("k");
    const stop = new AbortController();
    const waiting = limiter.acquire("k", { signal: stop.signal }).catch((error: unknown) => error);
    await settle();
    stop.abort("enough");
    expect(await waiting).toBe("enough");
  });
});
