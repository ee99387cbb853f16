// The bottleneck migration side by side (docs/migrate/bottleneck.md): the same job sequences
// run once on bottleneck 2.19.5 and once on a sluice throttle configured as the guide maps it,
// on one fake time: vitest's fake timers (Date, timers, performance.now) drive bottleneck, the
// jobs' durations, and sluice (a clock reading the fake Date; its waits on the faked timers). Start
// instants, order, which job is refused and how, events and counts must agree (bottleneck's
// own bookkeeping adds 1-3 ms per job: starts agree within SLACK_MS); where they do not, the
// difference is asserted as the guide's "what changes" list states it. The guide's p-queue and
// `limiter` sections are checked the same way further down; the clustering row on real Redis.
import Bottleneck from "bottleneck";
import { Redis } from "ioredis";
import PQueue from "p-queue";
import {
  type Clock,
  createLimiter,
  createThrottle,
  type Decision,
  type ScheduleOptions,
  type ThrottleOptions,
} from "sluice";
import { RedisStore } from "sluice/redis";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const T0 = Date.UTC(2026, 11, 7);
/** bottleneck's own scheduling takes a few (fake) ms per job. */
const SLACK_MS = 15;

/** One job of a sequence: when it is scheduled, how long it runs, and its options. */
interface Plan {
  id: string;
  at?: number;
  ms?: number;
  priority?: number;
  weight?: number;
  expiration?: number;
  key?: string;
}

/** What a run shows: each job's start (ms from the run's start), the start order, and each job's result. */
interface Run {
  starts: Record<string, number>;
  order: string[];
  results: Record<string, string>;
  events: string[];
}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function fakeTime(): void {
  beforeEach(() => {
    vi.useFakeTimers({
      toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date", "performance"],
    });
    vi.setSystemTime(T0);
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

function collector(start: number) {
  const run: Run = { starts: {}, order: [], results: {}, events: [] };
  const task = (plan: Plan) => async () => {
    run.starts[plan.id] = Date.now() - start;
    run.order.push(plan.id);
    await wait(plan.ms ?? 0);
    return plan.id;
  };
  const settle = (plan: Plan, p: Promise<unknown>) =>
    p.then(
      () => {
        run.results[plan.id] = "ok";
      },
      (error: Error) => {
        const name = error instanceof Bottleneck.BottleneckError ? "BottleneckError" : error.name;
        run.results[plan.id] = `${name}@${Date.now() - start}`;
      },
    );
  return { run, task, settle };
}

const BOTTLENECK_EVENTS = ["received", "queued", "executing", "done", "failed", "idle", "dropped"] as const;

/** The plans on bottleneck (a `Group` when a plan has a key), for `horizon` ms of fake time. */
async function onBottleneck(options: Bottleneck.ConstructorOptions, plans: Plan[], horizon: number): Promise<Run> {
  const start = Date.now();
  const { run, task, settle } = collector(start);
  const grouped = plans.some((p) => p.key !== undefined);
  const group = grouped ? new Bottleneck.Group(options) : undefined;
  const single = grouped ? undefined : new Bottleneck(options);
  const limiter = (key?: string) => (group ? group.key(key ?? "") : (single as Bottleneck));
  // A listener must return nothing: bottleneck reads a number returned by "failed" as a retry delay.
  for (const e of BOTTLENECK_EVENTS)
    (single as unknown as { on(name: string, listener: () => void): void } | undefined)?.on(e, () => {
      run.events.push(e);
    });
  const all = plans.map((plan) =>
    wait(plan.at ?? 0).then(() => {
      const o: { -readonly [K in keyof Bottleneck.JobOptions]: Bottleneck.JobOptions[K] } = {};
      if (plan.priority !== undefined) o.priority = plan.priority;
      if (plan.weight !== undefined) o.weight = plan.weight;
      if (plan.expiration !== undefined) o.expiration = plan.expiration;
      return settle(plan, limiter(plan.key).schedule(o, task(plan)));
    }),
  );
  await vi.advanceTimersByTimeAsync(horizon);
  await Promise.all(all);
  // A Group's limiters are idle now; its cleanup interval was created on the fake timers and dies with them.
  await single?.stop({ dropWaitingJobs: true }).catch(() => {});
  return run;
}

/** The plans on a sluice throttle with `options`, its ManualClock moved with the fake timers. */
async function onSluice(options: ThrottleOptions, plans: Plan[], horizon: number): Promise<Run> {
  const throttle = createThrottle({ ...options, clock: fakeClock });
  const start = Date.now();
  const { run, task, settle } = collector(start);
  throttle.on("queued", () => run.events.push("queued"));
  throttle.on("start", () => run.events.push("start"));
  throttle.on("outcome", (o) => run.events.push(o.status));
  throttle.on("idle", () => run.events.push("idle"));
  const all = plans.map((plan) =>
    wait(plan.at ?? 0).then(() => {
      const o: ScheduleOptions = {};
      if (plan.priority !== undefined) o.priority = plan.priority;
      if (plan.weight !== undefined) o.cost = plan.weight;
      if (plan.expiration !== undefined) o.timeoutMs = plan.expiration;
      if (plan.key !== undefined) o.key = plan.key;
      return settle(plan, throttle.schedule(task(plan), o));
    }),
  );
  await advance(horizon);
  await Promise.all(all);
  await throttle.close();
  return run;
}

/** sluice's clock on the fake time: its waits run on the faked timers and performance.now(). */
const fakeClock: Clock = { now: () => Date.now() };

/** Moves the fake time (both libraries' only time) `ms` forward. */
async function advance(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}

/** The two runs agree: the same order, each start within SLACK_MS, the same results. */
function same(peer: Run, ours: Run): void {
  expect(ours.order).toEqual(peer.order);
  for (const id of peer.order) {
    const gap = (peer.starts[id] as number) - (ours.starts[id] as number);
    expect(
      gap,
      `${id}: bottleneck started it at ${peer.starts[id]}, sluice at ${ours.starts[id]}`,
    ).toBeGreaterThanOrEqual(0);
    expect(gap, `${id}: bottleneck started it at ${peer.starts[id]}, sluice at ${ours.starts[id]}`).toBeLessThanOrEqual(
      SLACK_MS,
    );
  }
  expect(Object.keys(ours.results).sort()).toEqual(Object.keys(peer.results).sort());
}

const jobs = (n: number, extra: Partial<Plan> = {}): Plan[] =>
  Array.from({ length: n }, (_, i) => ({ id: `j${i + 1}`, ...extra }));

describe("bottleneck → createThrottle, side by side on one fake time", () => {
  fakeTime();

  it("maxConcurrent: n → concurrency: n", async () => {
    const plans = jobs(5, { ms: 300 });
    const peer = await onBottleneck({ maxConcurrent: 2 }, plans, 1500);
    const ours = await onSluice({ concurrency: 2 }, plans, 1500);
    same(peer, ours);
    expect(Object.values(ours.starts)).toEqual([0, 0, 300, 300, 600]);
  });

  it("minTime: ms → gcra { limit: 1, periodMs: ms, burst: 1 }: starts exactly ms apart", async () => {
    const plans = jobs(5);
    const peer = await onBottleneck({ minTime: 100 }, plans, 1000);
    const ours = await onSluice({ rate: { algorithm: "gcra", limit: 1, periodMs: 100, burst: 1 } }, plans, 1000);
    same(peer, ours);
    expect(Object.values(ours.starts)).toEqual([0, 100, 200, 300, 400]);
  });

  it("reservoir + reservoirRefreshInterval/Amount → fixed-window, anchor: first (also after an idle gap)", async () => {
    const plans = [...jobs(4), ...jobs(4).map((p, i) => ({ ...p, id: `late${i + 1}`, at: 1500 }))];
    const peer = await onBottleneck(
      { reservoir: 3, reservoirRefreshInterval: 1000, reservoirRefreshAmount: 3 },
      plans,
      3000,
    );
    const ours = await onSluice(
      { rate: { algorithm: "fixed-window", limit: 3, windowMs: 1000, anchor: "first" } },
      plans,
      3000,
    );
    same(peer, ours);
    expect(ours.starts).toMatchObject({ j3: 0, j4: 1000, late1: 1500, late2: 1500, late3: 2000, late4: 2000 });
  });

  it("what changes: bottleneck refreshes on a grid from the limiter's creation, anchor: first from the key's first job", async () => {
    const plans = jobs(4, { at: 300 });
    const peer = await onBottleneck(
      { reservoir: 3, reservoirRefreshInterval: 1000, reservoirRefreshAmount: 3 },
      plans,
      2000,
    );
    const ours = await onSluice(
      { rate: { algorithm: "fixed-window", limit: 3, windowMs: 1000, anchor: "first" } },
      plans,
      2000,
    );
    expect(peer.starts.j4).toBeGreaterThanOrEqual(1000);
    expect(peer.starts.j4).toBeLessThan(1000 + SLACK_MS);
    expect(ours.starts.j4).toBe(1300);
  });

  it("reservoirIncreaseInterval/Amount/Maximum → token-bucket: the same count by each step, sooner in between (continuous refill)", async () => {
    const plans = jobs(8);
    const peer = await onBottleneck(
      { reservoir: 4, reservoirIncreaseInterval: 1000, reservoirIncreaseAmount: 2, reservoirIncreaseMaximum: 4 },
      plans,
      3000,
    );
    const ours = await onSluice({ rate: { algorithm: "token-bucket", capacity: 4, refillPerSecond: 2 } }, plans, 3000);
    expect(ours.order).toEqual(peer.order);
    const by = (run: Run, t: number) => Object.values(run.starts).filter((s) => s <= t).length;
    for (const step of [0 + SLACK_MS, 1000 + SLACK_MS, 2000 + SLACK_MS]) expect(by(ours, step)).toBe(by(peer, step));
    // The documented difference: bottleneck adds 2 at each second; the bucket one every 500 ms.
    expect(peer.starts.j5).toBeGreaterThanOrEqual(1000);
    expect(ours.starts).toMatchObject({ j5: 500, j6: 1000, j7: 1500, j8: 2000 });
  });

  it("priority: the same 0–9 scale, 0 first, default 5, first come first served within a priority", async () => {
    const plans: Plan[] = [
      { id: "blocker", ms: 10 },
      ...[5, 9, 0, undefined, 1, 0].map(
        (priority, i): Plan =>
          priority === undefined ? { id: `pdefault-${i}` } : { id: `p${priority}-${i}`, priority },
      ),
    ];
    const peer = await onBottleneck({ maxConcurrent: 1 }, plans, 200);
    const ours = await onSluice({ concurrency: 1 }, plans, 200);
    expect(ours.order).toEqual(peer.order);
    expect(ours.order).toEqual(["blocker", "p0-2", "p0-5", "p1-4", "p5-0", "pdefault-3", "p9-1"]);
  });

  it("weight → cost against the rate; a costly head holds back cheaper jobs behind it in both", async () => {
    const plans = [4, 4, 4, 2].map((weight, i) => ({ id: `w${weight}-${i}`, weight }));
    const peer = await onBottleneck(
      { reservoir: 10, reservoirRefreshInterval: 1000, reservoirRefreshAmount: 10 },
      plans,
      2000,
    );
    const ours = await onSluice(
      { rate: { algorithm: "fixed-window", limit: 10, windowMs: 1000, anchor: "first" } },
      plans,
      2000,
    );
    same(peer, ours);
    expect(ours.starts).toEqual({ "w4-0": 0, "w4-1": 0, "w4-2": 1000, "w2-3": 1000 });
  });

  it("what changes: bottleneck's weight also counts against maxConcurrent; sluice's cost does not (one slot per job)", async () => {
    const plans = jobs(4, { ms: 100, weight: 2 });
    const peer = await onBottleneck({ maxConcurrent: 4 }, plans, 500);
    const ours = await onSluice({ concurrency: 4 }, plans, 500);
    expect(Object.values(peer.starts).filter((s) => s < 100)).toHaveLength(2);
    expect(Object.values(ours.starts).filter((s) => s < 100)).toHaveLength(4);
    // With one weight for every job, concurrency: maxConcurrent / weight keeps bottleneck's answer.
    same(peer, await onSluice({ concurrency: 2 }, jobs(4, { ms: 100 }), 500));
  });

  it("expiration → timeoutMs: both reject at the same instant; what changes: sluice holds the slot until the task settles", async () => {
    const plans: Plan[] = [{ id: "slow", ms: 500, expiration: 100 }, { id: "next" }];
    const peer = await onBottleneck({ maxConcurrent: 1 }, plans, 1000);
    const ours = await onSluice({ concurrency: 1 }, plans, 1000);
    expect(peer.results.slow).toMatch(/^BottleneckError@10\d$/);
    expect(ours.results.slow).toBe("TimeoutError@100");
    expect(peer.starts.next).toBeLessThan(100 + SLACK_MS); // bottleneck frees the slot at the expiration
    expect(ours.starts.next).toBe(500); // sluice when the task really ends
  });

  it("Bottleneck.Group → the `key` option: a queue and limits per key", async () => {
    const plans: Plan[] = [
      { id: "a1", key: "a", ms: 100 },
      { id: "a2", key: "a", ms: 100 },
      { id: "b1", key: "b", ms: 100 },
      { id: "a3", key: "a" },
    ];
    const peer = await onBottleneck({ maxConcurrent: 1 }, plans, 500);
    const ours = await onSluice({ concurrency: 1 }, plans, 500);
    expect(ours.starts).toEqual({ a1: 0, b1: 0, a2: 100, a3: 200 });
    for (const id of Object.keys(ours.starts)) {
      expect(Math.abs((peer.starts[id] as number) - (ours.starts[id] as number))).toBeLessThanOrEqual(SLACK_MS);
    }
  });

  it("events: received/queued → queued, executing → start, done/failed → outcome, idle → idle", async () => {
    const plans = jobs(3, { ms: 10 });
    const peer = await onBottleneck({ maxConcurrent: 1 }, plans, 200);
    const ours = await onSluice({ concurrency: 1 }, plans, 200);
    const count = (run: Run, name: string) => run.events.filter((e) => e === name).length;
    expect(count(ours, "queued")).toBe(count(peer, "received"));
    expect(count(ours, "start")).toBe(count(peer, "executing"));
    expect(count(ours, "done")).toBe(count(peer, "done"));
    expect(count(ours, "idle")).toBe(count(peer, "idle"));
    expect(count(peer, "idle")).toBe(1);
    // bottleneck's "queued" fires only for a job that had to wait (sluice's `queued` for every job).
    expect(count(peer, "queued")).toBeLessThanOrEqual(count(peer, "received"));
  });

  it("highWater + strategy OVERFLOW → maxQueued: the same job is refused (QueueFullError rather than a drop)", async () => {
    const plans = jobs(4, { ms: 10 });
    const peer = await onBottleneck(
      { maxConcurrent: 1, highWater: 2, strategy: Bottleneck.strategy.OVERFLOW },
      plans,
      200,
    );
    const ours = await onSluice({ concurrency: 1, maxQueued: 2 }, plans, 200);
    same(peer, ours);
    expect(peer.results.j4).toMatch(/^BottleneckError@/);
    expect(ours.results.j4).toBe("QueueFullError@0");
  });

  it("counts() → stats(); stop({ dropWaitingJobs }) → close({ drain: !dropWaitingJobs }); submit/wrap → schedule/wrap", async () => {
    const peer = new Bottleneck({ maxConcurrent: 1 });
    const ours = createThrottle({ concurrency: 1, clock: fakeClock });
    const settled = (ps: Promise<number>[]) =>
      Promise.allSettled(ps).then((rs) => rs.map((r) => (r.status === "fulfilled" ? r.value : "rejected")));
    const peerJobs = settled([1, 2, 3].map((n) => peer.schedule(() => wait(100).then(() => n))));
    const ourJobs = settled([1, 2, 3].map((n) => ours.schedule(() => wait(100).then(() => n))));
    await advance(20);
    const c = peer.counts();
    expect(ours.stats()).toMatchObject({ queued: c.QUEUED, running: c.EXECUTING + c.RUNNING });
    // Dropping the waiting jobs: the running one finishes, the two waiting are rejected.
    const stopped = peer.stop({ dropWaitingJobs: true });
    const closed = ours.close({ drain: false });
    await advance(200);
    await Promise.all([stopped, closed]);
    expect(await ourJobs).toEqual(await peerJobs);
    expect(await ourJobs).toEqual([1, "rejected", "rejected"]);

    // drain: everything runs.
    const peer2 = new Bottleneck({ maxConcurrent: 1 });
    const ours2 = createThrottle({ concurrency: 1, clock: fakeClock });
    const twice = async (n: number) => n * 2;
    const peerWrapped = peer2.wrap(twice);
    const ourWrapped = ours2.wrap(twice);
    const submitted = new Promise((resolve) =>
      peer2.submit(
        (n: number, cb: (e: null, r: number) => void) => cb(null, n * 2),
        7,
        (_e: unknown, r: unknown) => resolve(r),
      ),
    );
    const all = Promise.all([peerWrapped(1), ourWrapped(1), submitted, ours2.schedule(() => twice(7))]);
    const drained = Promise.all([peer2.stop({ dropWaitingJobs: false }), ours2.close({ drain: true })]);
    await advance(50);
    expect(await all).toEqual([2, 2, 14, 14]);
    await drained;
  });

  it("trackDoneStatus → stats() counts finished jobs always", async () => {
    const tracked = new Bottleneck({ trackDoneStatus: true });
    const counted = createThrottle({ concurrency: 1, clock: fakeClock });
    const both = Promise.all([tracked.schedule(async () => 1), counted.schedule(async () => 1)]);
    await advance(50);
    await both;
    expect(counted.stats().done).toBe(tracked.counts().DONE);
    const stopped2 = Promise.all([tracked.stop(), counted.close()]);
    await advance(50);
    await stopped2;
  });

  it("updateSettings → a new throttle with the new options, the old one drained", async () => {
    const peer = new Bottleneck({ maxConcurrent: 1 });
    const peerRun = collector(Date.now());
    const first = [1, 2].map((n) => peer.schedule(peerRun.task({ id: `old${n}`, ms: 100 })));
    peer.updateSettings({ maxConcurrent: 2 });
    const later = [1, 2].map((n) => peer.schedule(peerRun.task({ id: `new${n}`, ms: 100 })));
    let ours = createThrottle({ concurrency: 1, clock: fakeClock });
    const ourRun = collector(Date.now());
    const ourFirst = [1, 2].map((n) => ours.schedule(ourRun.task({ id: `old${n}`, ms: 100 })));
    const old = ours;
    ours = createThrottle({ concurrency: 2, clock: fakeClock });
    const drained = old.close({ drain: true });
    const ourLater = [1, 2].map((n) => ours.schedule(ourRun.task({ id: `new${n}`, ms: 100 })));
    await advance(500);
    await Promise.all([...first, ...later, ...ourFirst, ...ourLater, drained]);
    // bottleneck's new setting covers its old queue too: both run under their own limit at once.
    expect(peerRun.run.starts).toMatchObject({ new1: expect.any(Number), new2: expect.any(Number) });
    expect(ourRun.run.starts).toEqual({ old1: 0, new1: 0, new2: 0, old2: 100 });
    expect(Object.values(peerRun.run.starts).filter((s) => s < 100)).toHaveLength(2);
    await Promise.all([peer.stop(), ours.close()]);
  });

  it("on('failed') returning a delay (a retry) → retry inside the task: the same outcome", async () => {
    const flaky = () => {
      let calls = 0;
      return async () => {
        calls++;
        if (calls === 1) throw new Error("flaky");
        return calls;
      };
    };
    const peer = new Bottleneck({ maxConcurrent: 1 });
    peer.on("failed", (_error, info) => (info.retryCount === 0 ? 50 : undefined));
    const peerResult = peer.schedule(flaky());
    const ours = createThrottle({ concurrency: 1, clock: fakeClock });
    const task = flaky();
    const ourResult = ours.schedule(async () => {
      try {
        return await task();
      } catch {
        await wait(50);
        return task();
      }
    });
    await advance(100);
    expect(await ourResult).toBe(await peerResult);
    await Promise.all([peer.stop(), ours.close()]);
  });
});

describe("p-queue → createThrottle, side by side on one fake time", () => {
  fakeTime();

  async function onPQueue(options: ConstructorParameters<typeof PQueue>[0], plans: Plan[], horizon: number) {
    const queue = new PQueue(options);
    const start = Date.now();
    const { run, task, settle } = collector(start);
    const all = plans.map((plan) =>
      wait(plan.at ?? 0).then(() => {
        const o: { priority?: number; timeout?: number } = {};
        // p-queue: larger first (default 0); the plans carry sluice's 0–9, 0 first.
        if (plan.priority !== undefined) o.priority = 9 - plan.priority;
        if (plan.expiration !== undefined) o.timeout = plan.expiration;
        return settle(plan, queue.add(task(plan), o));
      }),
    );
    await vi.advanceTimersByTimeAsync(horizon);
    await Promise.all(all);
    return run;
  }

  it("concurrency, interval/intervalCap → fixed-window, priority (scale reversed), timeout → timeoutMs", async () => {
    const plans = [...jobs(5), ...jobs(3).map((p, i) => ({ ...p, id: `late${i + 1}`, at: 1500 }))];
    const peer = await onPQueue({ interval: 1000, intervalCap: 2 }, plans, 5000);
    const ours = await onSluice(
      { rate: { algorithm: "fixed-window", limit: 2, windowMs: 1000, anchor: "first" } },
      plans,
      5000,
    );
    same(peer, ours);

    const byPriority: Plan[] = [
      { id: "blocker", ms: 10 },
      ...[5, 9, 0, 1, 0].map((priority, i) => ({ id: `p${priority}-${i}`, priority })),
    ];
    same(await onPQueue({ concurrency: 1 }, byPriority, 100), await onSluice({ concurrency: 1 }, byPriority, 100));

    const timed: Plan[] = [{ id: "slow", ms: 500, expiration: 100 }];
    const peerTimed = await onPQueue({ concurrency: 1 }, timed, 600);
    const ourTimed = await onSluice({ concurrency: 1 }, timed, 600);
    expect(ourTimed.results).toEqual(peerTimed.results);
    expect(ourTimed.results.slow).toBe("TimeoutError@100");
  });

  it("interval runs from the queue's first task, as anchor: first does", async () => {
    const plans = jobs(5, { at: 300 });
    const peer = await onPQueue({ interval: 1000, intervalCap: 2 }, plans, 3000);
    const ours = await onSluice(
      { rate: { algorithm: "fixed-window", limit: 2, windowMs: 1000, anchor: "first" } },
      plans,
      3000,
    );
    same(peer, ours);
    expect(Object.values(ours.starts)).toEqual([300, 300, 1300, 1300, 2300]);
  });

  it("signal, size/pending → stats(), onIdle → idle, clear → close()", async () => {
    const queue = new PQueue({ concurrency: 1 });
    const throttle = createThrottle({ concurrency: 1, clock: fakeClock });
    const controller = new AbortController();
    const settled = (ps: Promise<unknown>[]) =>
      Promise.allSettled(ps).then((rs) =>
        rs.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message)),
      );
    const peerJobs = settled(
      [0, 1, 2].map((n) =>
        queue.add(
          async ({ signal }) => {
            await wait(100);
            return signal?.aborted ? -1 : n;
          },
          n === 2 ? { signal: controller.signal } : {},
        ),
      ),
    );
    const ourJobs = settled(
      [0, 1, 2].map((n) =>
        throttle.schedule(
          async ({ signal }) => {
            await wait(100);
            return signal.aborted ? -1 : n;
          },
          n === 2 ? { signal: controller.signal } : {},
        ),
      ),
    );
    await advance(10);
    expect(throttle.stats()).toMatchObject({ queued: queue.size, running: queue.pending });
    controller.abort(new Error("gone"));
    let peerIdle = false;
    let ourIdle = false;
    void queue.onIdle().then(() => (peerIdle = true));
    throttle.on("idle", () => (ourIdle = true));
    await advance(300);
    expect(await ourJobs).toEqual(await peerJobs);
    expect(await ourJobs).toEqual([0, 1, "gone"]);
    expect([peerIdle, ourIdle]).toEqual([true, true]);

    // clear: what waits is gone (p-queue forgets it; sluice rejects it).
    const waiting = [queue.add(() => wait(50)), queue.add(() => wait(50))];
    const ours = Promise.allSettled([throttle.schedule(() => wait(50)), throttle.schedule(() => wait(50))]);
    queue.clear();
    const closed = throttle.close();
    await advance(100);
    await closed;
    expect(queue.size).toBe(0);
    expect((await ours).map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
    await waiting[0];
  });
});

describe("limiter (RateLimiter) → the token bucket and first-hit window it is, side by side on one fake time", () => {
  fakeTime();

  it("removeTokens → schedule({ cost }), tryRemoveTokens → tryAcquire, getTokensRemaining → peek, fireImmediately → maxWaitMs: 0", async () => {
    const { RateLimiter } = await import("limiter");
    const peer = new RateLimiter({ tokensPerInterval: 4, interval: "second" });
    const spec = [
      { algorithm: "token-bucket", capacity: 4, refillPerSecond: 4 },
      { algorithm: "fixed-window", limit: 4, windowMs: 1000, anchor: "first" },
    ] as const;
    const throttle = createThrottle({ rate: [...spec], clock: fakeClock });
    const start = Date.now();
    const peerLog: [string, number][] = [];
    const ourLog: [string, number][] = [];
    for (const [id, n] of [
      ["a", 3],
      ["b", 1],
      ["c", 2],
      ["d", 1],
    ] as const) {
      void peer.removeTokens(n).then(() => peerLog.push([id, Date.now() - start]));
      void throttle.schedule(async () => ourLog.push([id, Date.now() - start]), { cost: n });
    }
    await advance(3000);
    expect(ourLog.map(([id]) => id)).toEqual(peerLog.map(([id]) => id));
    // limiter's own timer rounds the wait to whole ms of performance.now(): within a ms or two.
    for (const [i, [, at]] of ourLog.entries()) {
      expect(Math.abs(at - (peerLog[i] as [string, number])[1])).toBeLessThanOrEqual(2);
    }
    expect(ourLog).toEqual([
      ["a", 0],
      ["b", 0],
      ["c", 1000],
      ["d", 1000],
    ]);

    // Without a queue: the same rule on a limiter.
    const limiter = createLimiter([...spec], { clock: fakeClock });
    const peer2 = new RateLimiter({ tokensPerInterval: 4, interval: "second" });
    const tries = [3, 2, 1, 1];
    expect(tries.map((n) => (limiter.tryAcquire("k", n) as Decision).allowed)).toEqual(
      tries.map((n) => peer2.tryRemoveTokens(n)),
    );
    expect((limiter.peek("k") as Decision).remaining + 1).toBe(0 + 1); // both spent: 4 of 4
    expect(peer2.getTokensRemaining()).toBe(0);
    await advance(1000);
    // After the interval: the bucket is full again; peek reports what remains after one more unit.
    expect((limiter.peek("k") as Decision).remaining + 1).toBe(peer2.getTokensRemaining());

    const now = new RateLimiter({ tokensPerInterval: 1, interval: "second", fireImmediately: true });
    const nowThrottle = createThrottle({
      rate: { algorithm: "token-bucket", capacity: 1, refillPerSecond: 1 },
      clock: fakeClock,
    });
    expect(await now.removeTokens(1)).toBe(0);
    expect(await now.removeTokens(1)).toBe(-1); // refused at once
    await nowThrottle.schedule(async () => 1, { maxWaitMs: 0 });
    await expect(nowThrottle.schedule(async () => 1, { maxWaitMs: 0 })).rejects.toMatchObject({
      code: "ERR_WAIT_TIMEOUT",
    });
    await Promise.all([throttle.close(), nowThrottle.close()]);
  });
});

const redis = await standaloneRedis("bottleneck clustering side by side");

describe.skipIf(redis === undefined)("clustering: datastore ioredis + id → RedisStore + name", () => {
  it("two limiters of one id / two throttles of one name share maxConcurrent / concurrency", {
    timeout: 60_000,
  }, async () => {
    const url = redis?.url ?? "";
    const { hostname, port } = new URL(url);
    const id = uniquePrefix("bottleneck").replaceAll(":", "-");
    const peers = [0, 1].map(
      () =>
        new Bottleneck({
          id,
          datastore: "ioredis",
          clientOptions: { host: hostname, port: Number(port) },
          maxConcurrent: 1,
        }),
    );
    const clients = [new Redis(url), new Redis(url)];
    const prefix = uniquePrefix("bottleneck-sluice");
    const stores = clients.map((client) => new RedisStore({ client, prefix, timeoutMs: 10_000 }));
    const ours = stores.map((store) => createThrottle({ name: "github", store, concurrency: 1, pollMs: 5 }));
    /** The most jobs running at once over both members, each job 20 ms. */
    const most = async (schedule: (i: number, job: () => Promise<void>) => Promise<void>) => {
      let running = 0;
      let top = 0;
      const job = async () => {
        running++;
        top = Math.max(top, running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running--;
      };
      await Promise.all(Array.from({ length: 8 }, (_, i) => schedule(i, job)));
      return top;
    };
    try {
      await Promise.all(peers.map((p) => p.ready()));
      expect(await most((i, job) => (peers[i % 2] as Bottleneck).schedule(job))).toBe(1);
      expect(await most((i, job) => (ours[i % 2] as ReturnType<typeof createThrottle>).schedule(job))).toBe(1);
    } finally {
      await Promise.all(peers.map((p) => p.disconnect()));
      await Promise.all(ours.map((t) => t.close()));
      for (const s of stores) await s.close();
      for (const c of clients) c.disconnect();
    }
  });
});
