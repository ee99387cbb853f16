// createThrottle on a ManualClock: order, costs, waits, aborts, timeouts, closing, keys, events.
// Tasks are plain functions; `settle()` lets their promises settle between clock moves.
import {
  ArgumentError,
  ConfigError,
  createLimiter,
  createThrottle,
  ManualClock,
  MemoryStore,
  QueueFullError,
  ThrottleClosedError,
  WaitTimeoutError,
} from "sluice";
import { describe, expect, it } from "vitest";

const T0 = Date.UTC(2026, 11, 7);
/** One start per second, no burst: starts are spaced exactly 1000 ms apart. */
const ONE_PER_SECOND = { algorithm: "gcra", limit: 1, periodMs: 1000, burst: 1 } as const;

/** Marks a rejection as handled now (it is checked later), so Node does not report it. */
function later<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

/** Lets every pending promise callback run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function setup(extra: Record<string, unknown> = {}) {
  const clock = new ManualClock(T0);
  const throttle = createThrottle({ rate: ONE_PER_SECOND, clock, ...extra });
  const started: string[] = [];
  const job = (name: string) => () => {
    started.push(name);
    return name;
  };
  return { clock, throttle, started, job };
}

describe("createThrottle: order", () => {
  it("starts priority 0 first, first come first served within a priority", async () => {
    const { clock, throttle, started, job } = setup();
    const results = [
      throttle.schedule(job("first")),
      throttle.schedule(job("low-a"), { priority: 9 }),
      throttle.schedule(job("mid-a")),
      throttle.schedule(job("high"), { priority: 0 }),
      throttle.schedule(job("mid-b"), { priority: 5 }),
      throttle.schedule(job("low-b"), { priority: 9 }),
    ];
    expect(started).toEqual(["first"]);
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      await settle();
    }
    expect(started).toEqual(["first", "high", "mid-a", "mid-b", "low-a", "low-b"]);
    expect(await Promise.all(results)).toEqual(["first", "low-a", "mid-a", "high", "mid-b", "low-b"]);
    expect(throttle.stats()).toEqual({ queued: 0, running: 0, done: 6, failed: 0, expired: 0 });
  });

  it("waits exactly the refusal's retryAfterMs: nothing starts a millisecond early", async () => {
    const { clock, throttle, started, job } = setup();
    void throttle.schedule(job("a"));
    void throttle.schedule(job("b"));
    clock.advance(999);
    await settle();
    expect(started).toEqual(["a"]);
    clock.advance(1);
    await settle();
    expect(started).toEqual(["a", "b"]);
  });

  it("a job's cost takes that many units; a cost above the limit can never pass", async () => {
    const clock = new ManualClock(T0);
    const throttle = createThrottle({ rate: { algorithm: "token-bucket", capacity: 10, refillPerSecond: 1 }, clock });
    const started: number[] = [];
    // Refused at once: no wait could ever let it pass.
    await expect(throttle.schedule(() => 0, { cost: 11 })).rejects.toBeInstanceOf(WaitTimeoutError);
    void throttle.schedule(() => started.push(8), { cost: 8 });
    void throttle.schedule(() => started.push(5), { cost: 5 });
    expect(started).toEqual([8]);
    clock.advance(2999);
    await settle();
    expect(started).toEqual([8]);
    clock.advance(1);
    await settle();
    expect(started).toEqual([8, 5]);
  });
});

describe("createThrottle: leaving the queue", () => {
  it("maxWaitMs: a job that cannot start in time is rejected with WaitTimeoutError", async () => {
    const { clock, throttle, started, job } = setup();
    void throttle.schedule(job("a"));
    void throttle.schedule(job("b"));
    // Its place needs 2000 ms (behind b): it is refused as soon as that is known.
    const c = later(throttle.schedule(job("c"), { maxWaitMs: 1500 }));
    const d = throttle.schedule(job("d"), { maxWaitMs: 3000 });
    clock.advance(1000);
    await settle();
    clock.advance(500);
    await settle();
    await expect(c).rejects.toBeInstanceOf(WaitTimeoutError);
    clock.advance(500);
    await settle();
    expect(await d).toBe("d");
    expect(started).toEqual(["a", "b", "d"]);
    expect(throttle.stats()).toMatchObject({ done: 3, expired: 1 });
  });

  it("maxWaitMs: 0 starts now or never", async () => {
    const { throttle, job } = setup();
    expect(await throttle.schedule(job("now"), { maxWaitMs: 0 })).toBe("now");
    await expect(throttle.schedule(job("never"), { maxWaitMs: 0 })).rejects.toBeInstanceOf(WaitTimeoutError);
  });

  it("an aborted signal removes the job (rejecting with its reason) and frees nothing it did not take", async () => {
    const { clock, throttle, started, job } = setup();
    void throttle.schedule(job("a"));
    const controller = new AbortController();
    const b = later(throttle.schedule(job("b"), { signal: controller.signal }));
    void throttle.schedule(job("c"));
    controller.abort(new Error("changed my mind"));
    await expect(b).rejects.toThrow("changed my mind");
    // c takes b's turn, not earlier: b took nothing, so there is nothing to give back.
    clock.advance(999);
    await settle();
    expect(started).toEqual(["a"]);
    clock.advance(1);
    await settle();
    expect(started).toEqual(["a", "c"]);
    expect(throttle.stats()).toMatchObject({ queued: 0, failed: 1 });
    const aborted = new AbortController();
    aborted.abort();
    await expect(throttle.schedule(job("x"), { signal: aborted.signal })).rejects.toMatchObject({ name: "AbortError" });
  });

  it("timeoutMs aborts the task's signal and rejects; the slot is held until the task settles", async () => {
    const { clock, throttle } = setup();
    let seen: AbortSignal | undefined;
    let finish: () => void = () => {};
    const p = later(
      throttle.schedule(
        ({ signal }) =>
          new Promise<void>((resolve) => {
            seen = signal;
            finish = resolve;
          }),
        { timeoutMs: 500 },
      ),
    );
    clock.advance(500);
    await expect(p).rejects.toMatchObject({ name: "TimeoutError" });
    expect(seen?.aborted).toBe(true);
    expect(throttle.stats()).toMatchObject({ running: 1, expired: 1 });
    finish();
    await settle();
    expect(throttle.stats()).toMatchObject({ running: 0, expired: 1, done: 0 });
  });

  it("a failing task rejects with its error and counts as failed", async () => {
    const { throttle } = setup();
    await expect(
      throttle.schedule(() => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(throttle.stats()).toMatchObject({ failed: 1, running: 0 });
  });

  it("maxQueued bounds the jobs waiting in this process", async () => {
    const { throttle, job } = setup({ maxQueued: 2 });
    void throttle.schedule(job("runs at once"));
    const waiting = [later(throttle.schedule(job("waits 1"))), later(throttle.schedule(job("waits 2")))];
    const full = throttle.schedule(job("refused"));
    await expect(full).rejects.toBeInstanceOf(QueueFullError);
    await expect(full).rejects.toMatchObject({ code: "ERR_QUEUE_FULL" });
    await throttle.close();
    for (const w of waiting) await expect(w).rejects.toBeInstanceOf(ThrottleClosedError);
  });
});

describe("createThrottle: close", () => {
  it("without drain rejects what is queued; after close, schedule rejects", async () => {
    const { throttle, started, job } = setup();
    const a = throttle.schedule(job("a"));
    const b = later(throttle.schedule(job("b")));
    await throttle.close();
    expect(await a).toBe("a");
    await expect(b).rejects.toBeInstanceOf(ThrottleClosedError);
    await expect(throttle.schedule(job("c"))).rejects.toBeInstanceOf(ThrottleClosedError);
    expect(started).toEqual(["a"]);
  });

  it("with drain runs what is queued, then resolves", async () => {
    const { clock, throttle, started, job } = setup();
    for (const n of ["a", "b", "c"]) void throttle.schedule(job(n));
    let closed = false;
    void throttle.close({ drain: true }).then(() => (closed = true));
    await expect(throttle.schedule(job("late"))).rejects.toBeInstanceOf(ThrottleClosedError);
    clock.advance(1000);
    await settle();
    expect(closed).toBe(false);
    clock.advance(1000);
    await settle();
    expect(started).toEqual(["a", "b", "c"]);
    expect(closed).toBe(true);
  });
});

describe("createThrottle: keys", () => {
  it("each key has its own queue and limit; idle keys are dropped", async () => {
    const { clock, throttle, started, job } = setup();
    void throttle.schedule(job("a1"), { key: "a" });
    void throttle.schedule(job("a2"), { key: "a" });
    void throttle.schedule(job("b1"), { key: "b" });
    expect(started).toEqual(["a1", "b1"]);
    const runner = (throttle as unknown as { runner: { heldKeys(): number } }).runner;
    await settle();
    expect(runner.heldKeys()).toBe(1);
    clock.advance(1000);
    await settle();
    expect(started).toEqual(["a1", "b1", "a2"]);
    expect(runner.heldKeys()).toBe(0);
  });

  it("50,000 keys pass through without the throttle keeping them", async () => {
    const clock = new ManualClock(T0);
    const throttle = createThrottle({ rate: { algorithm: "fixed-window", limit: 1, windowMs: 1000 }, clock });
    const runner = (throttle as unknown as { runner: { heldKeys(): number } }).runner;
    let ran = 0;
    for (let i = 0; i < 50_000; i++) void throttle.schedule(() => ran++, { key: `k${i}` });
    expect(ran).toBe(50_000);
    await settle();
    expect(runner.heldKeys()).toBe(0);
  });
});

describe("createThrottle: pause", () => {
  it("pause(key, ms) holds the key's jobs, in order, for every throttle on the store", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore();
    const a = createThrottle({ name: "api", rate: ONE_PER_SECOND, clock, store });
    const b = createThrottle({ name: "api", rate: ONE_PER_SECOND, clock, store, pollMs: 10 });
    await a.pause("default", 5000);
    const started: string[] = [];
    void a.schedule(() => started.push("a1"));
    void b.schedule(() => started.push("b1"));
    void a.schedule(() => started.push("a2"));
    clock.advance(4999);
    await settle();
    expect(started).toEqual([]);
    clock.advance(1);
    await settle();
    expect(started.length).toBe(1);
    clock.advance(1000);
    await settle();
    clock.advance(1000);
    await settle();
    expect(started.length).toBe(3);
    expect(started.indexOf("a1")).toBeLessThan(started.indexOf("a2"));
  });
});

describe("createThrottle: the cool-down after a pause (coolDownEnd)", () => {
  it("one job at a time for as long as the pause lasted; a long job holds no start past its end; one from before the pause holds none", async () => {
    const clock = new ManualClock(T0);
    const throttle = createThrottle({ rate: { algorithm: "gcra", limit: 100, periodMs: 1000 }, clock });
    const started: string[] = [];
    const ends = new Map<string, () => void>();
    const job = (name: string) => () =>
      new Promise<void>((resolve) => {
        started.push(name);
        ends.set(name, resolve);
      });
    // "before" runs since before the pause: it does not hold the cool-down.
    void throttle.schedule(job("before"));
    await throttle.pause("default", 500); // paused until T0 + 500, cooling down until T0 + 1000
    for (const name of ["a", "b", "c", "d"]) void throttle.schedule(job(name));
    clock.advance(500);
    await settle();
    expect(started).toEqual(["before", "a"]);
    ends.get("a")?.();
    await settle();
    expect(started).toEqual(["before", "a", "b"]);
    // "b" runs long: at the cool-down's end the rate alone decides again, at its steady pace (the
    // burst it refilled meanwhile is charged then: one start, the next a spacing of 10 ms later).
    clock.advance(499);
    await settle();
    expect(started).toEqual(["before", "a", "b"]);
    clock.advance(1);
    await settle();
    expect(started).toEqual(["before", "a", "b", "c"]);
    clock.advance(9);
    await settle();
    expect(started).toEqual(["before", "a", "b", "c"]);
    clock.advance(1);
    await settle();
    expect(started).toEqual(["before", "a", "b", "c", "d"]);
    for (const end of ends.values()) end();
    await throttle.close();
  });
});

describe("createThrottle: progress", () => {
  it("emits start and outcome events, and iterates outcomes until closed", async () => {
    const { clock, throttle, job } = setup();
    const events: string[] = [];
    throttle.on("start", (e) => events.push(`start ${e.key} waited ${e.waitedMs}`));
    throttle.on("outcome", (o) => events.push(`${o.status} ${o.key}`));
    throttle.on("idle", () => events.push("idle"));
    const seen: string[] = [];
    const reading = (async () => {
      for await (const o of throttle.outcomes()) seen.push(o.status);
    })();
    void throttle.schedule(job("a"));
    void later(throttle.schedule(() => Promise.reject(new Error("x"))));
    clock.advance(1000);
    await settle();
    await throttle.close();
    await reading;
    // The first job ran and finished before the second was scheduled: idle in between.
    expect(events).toEqual([
      "start default waited 0",
      "done default",
      "idle",
      "start default waited 1000",
      "failed default",
      "idle",
    ]);
    expect(seen).toEqual(["done", "failed"]);
  });

  it("wrap returns a throttled function", async () => {
    const { clock, throttle } = setup();
    const double = throttle.wrap((n: number) => n * 2);
    const results = [double(1), double(2)];
    clock.advance(1000);
    expect(await Promise.all(results)).toEqual([2, 4]);
  });
});

describe("createThrottle: options", () => {
  it.each([
    [{}, ConfigError, /needs `rate`, `concurrency` or both/],
    [{ rate: ONE_PER_SECOND, maxQueue: 5 }, ArgumentError, /unknown option `maxQueue`/],
    [{ rate: { algorithm: "gcra", limit: 0, periodMs: 1000 } }, ConfigError, /limit/],
    [{ concurrency: 1.5 }, ConfigError, /`concurrency` must be an integer ≥ 1 \(got 1.5\)/],
    [{ rate: ONE_PER_SECOND, leaseMs: 1000 }, ConfigError, /`leaseMs` needs `concurrency`/],
    [{ rate: ONE_PER_SECOND, maxQueued: -1 }, ConfigError, /`maxQueued` must be an integer ≥ 0 \(got -1\)/],
    [{ rate: ONE_PER_SECOND, retries: "3" }, ConfigError, /`retries` must be an integer ≥ 0 \(got "3"\)/],
    [{ rate: ONE_PER_SECOND, store: {} }, ConfigError, /`store` must be a Store/],
    [{ rate: ONE_PER_SECOND, clock: Date }, ConfigError, /`clock` must have a now\(\) method/],
  ])("%o is refused", (options, type, message) => {
    expect(() => createThrottle(options as never)).toThrow(type);
    expect(() => createThrottle(options as never)).toThrow(message);
  });

  it("names the field and value of a bad option", () => {
    try {
      createThrottle({ rate: ONE_PER_SECOND, pollMs: 0 });
    } catch (error) {
      expect(error).toMatchObject({ field: "pollMs", value: 0 });
    }
    expect.assertions(1);
  });

  it.each([
    [{ priority: 10 }, /`priority` must be an integer 0–9 \(got 10\)/],
    [{ cost: 0 }, /`cost` must be a positive integer \(got 0\)/],
    [{ key: 5 }, /`key` must be a string \(got 5\)/],
    [{ maxWaitMs: -1 }, /`maxWaitMs` must be a number of ms ≥ 0 \(got -1\)/],
    [{ timeoutMs: 0 }, /`timeoutMs` must be a number of ms > 0 \(got 0\)/],
    [{ signal: {} }, /`signal` must be an AbortSignal/],
    [{ prio: 1 }, /unknown option `prio`/],
  ])("schedule(%o) rejects with ArgumentError", async (options, message) => {
    const { throttle } = setup();
    const p = throttle.schedule(() => 1, options as never);
    await expect(p).rejects.toBeInstanceOf(ArgumentError);
    await expect(p).rejects.toThrow(message);
  });
});

describe("createThrottle: concurrency", () => {
  it("runs at most `concurrency` jobs at once; a settled job's slot goes to the next at once", async () => {
    const clock = new ManualClock(T0);
    const throttle = createThrottle({ concurrency: 2, clock });
    const finishers: Array<() => void> = [];
    const started: number[] = [];
    const results = [0, 1, 2, 3, 4].map((i) =>
      throttle.schedule(
        () =>
          new Promise<number>((resolve) => {
            started.push(i);
            finishers[i] = () => resolve(i);
          }),
      ),
    );
    expect(started).toEqual([0, 1]);
    expect(throttle.stats()).toMatchObject({ queued: 3, running: 2 });
    finishers[1]?.();
    await settle();
    expect(started).toEqual([0, 1, 2]);
    finishers[0]?.();
    finishers[2]?.();
    await settle();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    finishers[3]?.();
    finishers[4]?.();
    expect(await Promise.all(results)).toEqual([0, 1, 2, 3, 4]);
    expect(throttle.stats()).toEqual({ queued: 0, running: 0, done: 5, failed: 0, expired: 0 });
  });

  it("a job of cost 1500 takes one slot and 1500 rate units; a refused rate gives the slot back", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore();
    const throttle = createThrottle({
      name: "llm",
      rate: { algorithm: "token-bucket", capacity: 2000, refillPerSecond: 100 },
      concurrency: 2,
      store,
      clock,
    });
    const slots = createLimiter(
      { algorithm: "concurrency", limit: 2, leaseMs: 60_000 },
      { store, clock, name: "throttle:llm:concurrency" },
    );
    const hold: Array<() => void> = [];
    const run = () => new Promise<void>((resolve) => hold.push(resolve));
    // A peek says what one more slot would leave: with one of two held, 0.
    const free = () => (slots.peek("default").allowed ? 1 + slots.peek("default").remaining : 0);
    expect(free()).toBe(2);
    void throttle.schedule(run, { cost: 1500 });
    expect(free()).toBe(1);
    // 500 tokens left: the second job waits for tokens, holding no slot meanwhile.
    void throttle.schedule(run, { cost: 1000 });
    expect(free()).toBe(1);
    expect(throttle.stats()).toMatchObject({ queued: 1, running: 1 });
    // 5 s refill the 500 missing, and 20 ms the 2 tokens a shared store's bucket holds back
    // against a late start (start-safe-rate.ts: capacity 1998 checked).
    clock.advance(5020);
    await settle();
    expect(throttle.stats()).toMatchObject({ queued: 0, running: 2 });
    expect(free()).toBe(0);
    for (const h of hold) h();
    await settle();
    expect(free()).toBe(2);
  });

  it("a running job renews its lease every leaseMs / 3 and releases it when it settles", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore();
    const throttle = createThrottle({ name: "renew", concurrency: 1, leaseMs: 3000, store, clock });
    const slots = createLimiter(
      { algorithm: "concurrency", limit: 1, leaseMs: 3000 },
      { store, clock, name: "throttle:renew:concurrency" },
    );
    let finish: () => void = () => {};
    void throttle.schedule(() => new Promise<void>((resolve) => (finish = resolve)));
    // Far past leaseMs: the lease is still held because it was renewed.
    for (let i = 0; i < 10; i++) clock.advance(1000);
    expect(slots.peek("default")).toMatchObject({ allowed: false, remaining: 0 });
    finish();
    await settle();
    expect(slots.peek("default")).toMatchObject({ allowed: true, remaining: 0 });
  });
});
