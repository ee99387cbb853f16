import { createLimiter, type Decision, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { it } from "vitest";

const T = 1_765_000_000_000;
const free = (l: { peek(k: string): unknown }, k: string) => {
  const d = l.peek(k) as Decision;
  return d.allowed ? d.remaining + 1 : 0;
};
it("probe", () => {
  // H1: skew
  {
    const store = new MemoryStore();
    const c1 = new ManualClock(T + 5);
    const c2 = new ManualClock(T);
    const a = createLimiter({ algorithm: "concurrency", limit: 2, leaseMs: 1000 }, { clock: c1, store, name: "x" });
    const b = createLimiter({ algorithm: "concurrency", limit: 2, leaseMs: 1000 }, { clock: c2, store, name: "x" });
    const da = a.tryAcquire("k");
    const db = b.tryAcquire("k");
    console.log("H1 at", da.at, db.at, "free", free(a, "k"));
    db.release?.();
    console.log("H1 after b release free", free(a, "k"), "(expect 1)");
  }
  // H2: maxKeys flood
  {
    const store = new MemoryStore({ maxKeys: 50 });
    const clock = new ManualClock(T);
    const l = createLimiter({ algorithm: "concurrency", limit: 2, leaseMs: 60_000 }, { clock, store, name: "y" });
    const d1 = l.tryAcquire("V");
    clock.advance(1);
    const d2 = l.tryAcquire("V");
    for (let i = 0; i < 500; i++) {
      clock.advance(1);
      const d = l.tryAcquire(`o${i}`);
      d.release?.();
    }
    console.log("H2 free before release", free(l, "V"), "(expect 0)");
    d1.release?.();
    d2.release?.();
    console.log("H2 free after release", free(l, "V"), "(expect 2)");
    const held = [];
    for (let i = 0; i < 5; i++) held.push(l.tryAcquire("W"));
    for (let i = 0; i < 500; i++) { clock.advance(1); l.tryAcquire(`p${i}`).release?.(); }
    let ok = 0;
    for (let i = 0; i < 5; i++) if (l.tryAcquire("W").allowed) ok++;
    console.log("H2b W admits after flood with 2 held:", ok, "(expect 0)");
  }
  // H3: updateRule leaseMs
  {
    const clock = new ManualClock(T);
    const s = new RateLimiterService({ clock });
    s.addRule("r", { algorithm: "concurrency", limit: 2, leaseMs: 1000 });
    s.check("r", "k"); s.check("r", "k");
    s.updateRule("r", { algorithm: "concurrency", limit: 2, leaseMs: 5000 });
    console.log("H3 after leaseMs change: check allowed?", s.check("r", "k").allowed, "(expect false)");
    s.updateRule("r", { algorithm: "concurrency", limit: 3, leaseMs: 5000 });
    console.log("H3 after limit up", s.check("r", "k").allowed);
  }
  // H4 snapshot
  {
    const clock = new ManualClock(T);
    const store = new MemoryStore();
    const l = createLimiter({ algorithm: "concurrency", limit: 2, leaseMs: 10_000 }, { clock, store, name: "z" });
    const d = l.tryAcquire("k"); l.tryAcquire("k");
    const text = store.snapshot(T);
    const store2 = new MemoryStore();
    store2.restore(text);
    const l2 = createLimiter({ algorithm: "concurrency", limit: 2, leaseMs: 10_000 }, { clock, store: store2, name: "z" });
    console.log("H4 free after restore", free(l2, "k"), "(expect 0)");
    l2.release("k", { at: d.at as number });
    console.log("H4 free after release", free(l2, "k"), "(expect 1)");
  }
  // H5 threads
  {
    const clock = new ManualClock(T);
    const store = new SharedMemoryStore({ maxKeys: 1000 });
    const l = createLimiter({ algorithm: "concurrency", limit: 2, leaseMs: 10_000 }, { clock, store, name: "z" });
    const d = l.tryAcquire("k") as Decision; l.tryAcquire("k");
    console.log("H5 free", free(l, "k"), "third", (l.tryAcquire("k") as Decision).allowed);
    d.release?.();
    console.log("H5 free after release", free(l, "k"), "(1)");
    store.close?.();
  }
  // H6 ban + block renew
  {
    const clock = new ManualClock(T);
    const l = createLimiter({ algorithm: "concurrency", limit: 1, leaseMs: 1000 }, { clock, name: "b" });
    const d = l.tryAcquire("k");
    l.block("k", 5000);
    clock.advance(500);
    const r = d.renew?.() as Decision;
    console.log("H6 renew under block (no ban policy)", r.allowed, r.retryAfterMs, r.at);
    const l2 = createLimiter({ algorithm: "concurrency", limit: 1, leaseMs: 1000 }, { clock, name: "b2", ban: { after: 1, withinMs: 1000, forMs: 5000 } });
    const d2 = l2.tryAcquire("k");
    l2.block("k", 5000);
    clock.advance(100);
    const r2 = d2.renew?.() as Decision;
    console.log("H6 renew under block (ban policy)", r2.allowed, r2.retryAfterMs, r2.at);
  }
});
