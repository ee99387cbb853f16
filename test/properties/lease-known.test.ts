// Violations of SPEC §16's lease promises found by the attack (test/properties/lease-*.test.ts),
// each as a minimal trace at fixed instants. Marked it.fails while the library breaks the
// promise: when one starts passing, the violation is fixed and the mark goes (as the first did).
import { createLimiter, type Decision, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";

const T = 1_765_000_000_000;
const lease = (limit: number, leaseMs: number) => ({ algorithm: "concurrency", limit, leaseMs }) as const;
/** Free slots of `key`: a peek of one unit says what taking it would leave. */
const free = (d: Decision): number => (d.allowed ? d.remaining + 1 : 0);

describe("lease promises the library broke, as minimal traces (it.fails while broken)", () => {
  // Found by lease-differential.test.ts (safety sweeps with clock steps back); minimal trace:
  // two limiters share one store, their clocks 5 ms apart (two processes on a ClusterStore, two
  // threads on a SharedMemoryStore, a request whose clock reading was delayed before it reached
  // the store). B (behind, T) acquires at T; A (ahead, T+5) acquires; B acquires again.
  // The log puts B's second lease at max(now, newest) = T+5, but its receipt (`at`) is B's
  // reading T. Expected: B2.release() frees B2's slot and leaves B1 held (renewable).
  // Got: B2.release() removes B1's entry (the one logged at T), B1.renew() is denied while B1
  // is held, and B2's entry stays until T+5+leaseMs (a slot leaked for leaseMs).
  // Likely cause: src/limiter.ts stamps `at` with the clock reading it passed to the store
  // (stamp(decide(...), now)); sliding-log.ts liveLog/commitLog log the lease at t = max(now,
  // newest). The receipt must be the instant the lease was logged at (t), as the store decides it.
  // Fixed on the lease branch in 9087314 (a concurrency member places a lease at its own
  // receipt): passes since.
  it("a lease acquired behind another's clock is released by its own receipt", () => {
    const store = new MemoryStore();
    const ahead = new ManualClock(T + 5);
    const behind = new ManualClock(T);
    const a = createLimiter(lease(3, 60_000), { clock: ahead, store, name: "skew" });
    const b = createLimiter(lease(3, 60_000), { clock: behind, store, name: "skew" });
    const b1 = b.tryAcquire("k");
    a.tryAcquire("k");
    const b2 = b.tryAcquire("k");
    expect([b1.allowed, b2.allowed]).toEqual([true, true]);
    expect(free(b.peek("k"))).toBe(0);
    b2.release?.();
    expect(free(b.peek("k"))).toBe(1);
    // B1 is still held: renewing it must pass.
    expect((b1.renew as () => Decision)().allowed).toBe(true);
  });

  // Found by lease-differential.test.ts with leaseMsChange (every seed that changes leaseMs
  // while leases are held). Expected: a rule's leases survive updateRule (a config reload while
  // requests are in flight), so no more than `limit` run at once. Got: a new leaseMs gives the
  // member a new shape (concurrency/<leaseMs>), the store starts it fresh, and `limit` more
  // requests are admitted beside the ones still running (4 in flight for limit 2).
  // Likely cause: logAlgorithm's shape `${kind}/${W}` (sliding-log.ts) puts leaseMs in the
  // identity of the state; a concurrency log reads the same under any leaseMs (entries are
  // receipts), so the state could be kept. Fixed on the lease branch (the shape is
  // "concurrency", without leaseMs): passes since.
  it("updateRule changing leaseMs keeps the leases in flight", () => {
    const clock = new ManualClock(T);
    const service = new RateLimiterService({ clock }).addRule("r", lease(2, 1000));
    expect(service.check("r", "k").allowed).toBe(true);
    expect(service.check("r", "k").allowed).toBe(true);
    service.updateRule("r", lease(2, 5000));
    clock.advance(10);
    expect(service.check("r", "k").allowed).toBe(false);
  });

  // Found by lease-differential.test.ts (exact sweep with limitDown, e.g. seed 20261220):
  //   limit 5: acquire cost 3 (L1) at T, acquire 2 (L2) at T+1; updateRule limit 1; L1.renew().
  // Expected: L1 is held (not released, not expired), so its renewal passes (it takes no new slot).
  // Got: denied, retryAfterMs Infinity ("no longer held"): the holder is told its lease is gone.
  // Likely cause: concurrency.ts renew counts receipts only past liveLog's `skip`, which skips
  // entries older than the newest `limit` (right for admission, wrong for "is it still held").
  // Fixed on the lease branch (a lease log skips only expired entries): passes since.
  it("a held lease renews after updateRule lowered the limit", () => {
    const clock = new ManualClock(T);
    const service = new RateLimiterService({ clock }).addRule("r", lease(5, 60_000));
    const l1 = service.check("r", "k", { cost: 3 }) as Decision;
    clock.advance(1);
    service.check("r", "k", { cost: 2 });
    service.updateRule("r", lease(1, 60_000));
    clock.advance(1);
    const r = service.renew("r", "k", { cost: 3, at: l1.at as number }) as Decision;
    expect(r.allowed).toBe(true);
  });

  // Found by lease-differential.test.ts ("memory step back", seed 20261348; there through a
  // penalty). Minimal trace, limit 5: L1 cost 3 at T, L2 cost 2 at T+1; updateRule limit 2;
  // L2.renew(); updateRule limit 5; then acquisitions.
  // Expected: L1 and L2 are both held (5 in flight), so nothing more is admitted.
  // Got: the renewal commits the log (commitLog drops the `skip` entries, which after a lowered
  // limit include entries older than the newest `limit`: L1's, still held), so once the limit is
  // back at 5 the store counts 2 and admits 3 more: 8 requests in flight for limit 5.
  // Likely cause: sliding-log.ts liveLog's skip mixes "expired" with "past the newest limit"; a
  // commit may drop only the expired ones (a penalty's force has the same flaw: it keeps at most
  // `limit` entries). Fixed on the lease branch, with the next one: passes since.
  it("a renewal after the limit was lowered forgets no other lease", () => {
    const clock = new ManualClock(T);
    const service = new RateLimiterService({ clock }).addRule("r", lease(5, 60_000));
    expect((service.check("r", "k", { cost: 3 }) as Decision).allowed).toBe(true);
    clock.advance(1);
    const l2 = service.check("r", "k", { cost: 2 }) as Decision;
    expect(l2.allowed).toBe(true);
    service.updateRule("r", lease(2, 60_000));
    clock.advance(1);
    expect((l2.renew as () => Decision)().allowed).toBe(true);
    service.updateRule("r", lease(5, 60_000));
    clock.advance(1);
    expect(service.check("r", "k").allowed).toBe(false);
  });

  it("a penalty after the limit was lowered forgets no lease", () => {
    const clock = new ManualClock(T);
    const service = new RateLimiterService({ clock }).addRule("r", lease(4, 60_000));
    expect((service.check("r", "k", { cost: 3 }) as Decision).allowed).toBe(true);
    service.updateRule("r", lease(1, 60_000));
    clock.advance(1);
    service.penalty("r", "k");
    service.updateRule("r", lease(4, 60_000));
    clock.advance(1);
    // 3 requests in flight and a penalty unit: nothing fits.
    expect(service.check("r", "k").allowed).toBe(false);
  });

  // Found probing limiter.acquire on a leased rule. Trace: limit 1, leaseMs 60 s; d = tryAcquire;
  // a waiter calls acquire("k"); d.release() frees the slot; the clock moves 1 ms.
  // Expected: the waiter gets the free slot (acquire "waits until allowed", and it is allowed).
  // Got: it waits until the released lease would have expired (60 s later): a slot sits idle for
  // leaseMs per waiter. Likely cause: src/acquire.ts WaitQueues sleep for the denial's
  // retryAfterMs (the oldest lease's expiry, an upper bound for leases); a release does not wake
  // the key's queue (src/lease.ts), and no shorter poll is used for leased rules. Fixed on the
  // lease branch (a release in this process wakes the key's first waiter): passes since.
  it("acquire() gets a slot freed by a release without waiting out leaseMs", async () => {
    const clock = new ManualClock(T);
    const limiter = createLimiter(lease(1, 60_000), clock);
    const held = limiter.tryAcquire("k");
    let got: Decision | undefined;
    const waiting = limiter.acquire("k").then((d) => {
      got = d;
    });
    const turns = async () => {
      for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 10));
    };
    await turns();
    (held.release as () => Decision)();
    clock.advance(1);
    await turns();
    const early = got?.allowed;
    clock.advance(60_000);
    await waiting;
    expect(early).toBe(true);
  });
});
