// The adaptive limit at run time, at fixed instants: windows close on the completion that finds
// them old and full enough, a probe measures only requests admitted after it began, and the
// shedder feeds it the latency of finished requests only.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../core/clock.ts";
import { AdaptiveLimit } from "./adaptive.ts";
import { GRADIENT_DEFAULTS } from "./gradient.ts";
import { type Release, Shedder } from "./shedder.ts";

const params = {
  ...GRADIENT_DEFAULTS,
  tolerance: 1.3,
  minLimit: 2,
  initialLimit: 10,
  windowMs: 100,
  minSamples: 2,
  probeIntervalMs: 1000,
};

describe("AdaptiveLimit", () => {
  it("probes first, closes a window once it is windowMs old with minSamples, then follows the gradient", () => {
    const limit = new AdaptiveLimit(params, 0, () => 0.5);
    expect(limit.current()).toBe(2);
    limit.completed(10, 0, 50);
    limit.completed(10, 0, 90);
    expect(limit.current()).toBe(2); // 90 ms old: still open
    limit.completed(10, 0, 100);
    expect(limit.current()).toBe(10);
    expect(limit.state.longRtt).toBe(10);
    // Queueing: 40 ms against 10 ms long-term cuts the limit at once (gradient clamped to 0.5).
    limit.started(10);
    limit.completed(40, 100, 150);
    limit.completed(40, 100, 200);
    expect(limit.state.limit).toBe(5);
    expect(limit.current()).toBe(5);
  });

  it("leaves requests admitted before a cut or a slow-start step out of the next window", () => {
    const limit = new AdaptiveLimit({ ...params, probeIntervalMs: 1e9 }, 0, () => 0.5);
    limit.completed(10, 0, 50);
    limit.completed(10, 0, 100); // probe done: limit 10, slow start
    limit.started(10);
    limit.completed(10, 100, 150);
    limit.completed(10, 100, 200); // no queue: slow start grows it to 15
    expect(limit.current()).toBe(15);
    // Requests admitted before that step (at 200) finish: left out, the window stays open.
    limit.completed(12, 150, 300);
    limit.completed(12, 190, 320);
    expect(limit.current()).toBe(15);
    limit.started(15);
    limit.completed(20, 210, 330);
    limit.completed(20, 220, 340); // queued at 15: cut to 15 × 1.3 × 10 / 20, slow start over
    expect(limit.state).toMatchObject({ limit: 9.75, slowStart: false });
    // The queue admitted before the cut drains slowly: it does not cut again.
    for (let t = 350; t < 500; t += 10) limit.completed(80, 300, t);
    expect(limit.state.limit).toBe(9.75);
    limit.completed(10, 345, 500);
    limit.completed(10, 345, 510); // the window of those admitted after the cut closes
    expect(limit.state.windows).toBe(4);
  });

  it("stretches a window of a quiet service to 10 × windowMs, then closes it with one sample", () => {
    const limit = new AdaptiveLimit(params, 0, () => 0.5);
    limit.completed(10, 0, 500);
    expect(limit.current()).toBe(2);
    limit.completed(10, 0, 1000);
    expect(limit.current()).toBe(10);
  });

  it("leaves requests admitted before a probe out of the probe's window", () => {
    const limit = new AdaptiveLimit(params, 0, () => 0.5);
    limit.completed(10, 0, 50);
    limit.completed(10, 0, 100); // the first probe ends: limit 10, next probe at 1100
    limit.completed(10, 100, 1150);
    limit.completed(10, 100, 1200); // this window is past 1100: the probe starts
    expect(limit.current()).toBe(2);
    // Queued requests admitted before the probe (at 1100) finish slowly: ignored.
    for (let t = 1210; t < 1400; t += 10) limit.completed(80, 1100, t);
    expect(limit.current()).toBe(2);
    limit.completed(12, 1250, 1300);
    limit.completed(12, 1250, 1310);
    expect(limit.state.longRtt).toBe(12);
    expect(limit.current()).toBeGreaterThan(2);
  });
});

describe("Shedder with an adaptive limit", () => {
  it("grows the limit while its reserve refuses the flood, though under half of it is in flight", () => {
    const clock = new ManualClock(0);
    const shedder = new Shedder<{ p: number }>({
      limit: "adaptive",
      adaptive: { minSamples: 1, windowMs: 10, initialLimit: 8, minLimit: 8 },
      reserve: { 0: 0.75 },
      priority: (r) => r.p,
      clock,
    });
    const finish = (n: number) => {
      const held = Array.from({ length: n }, () => shedder.admit({ p: 5 }) as Release);
      expect(shedder.admit({ p: 5 })).toBeUndefined(); // the flood's 2 of 8 are taken: refused
      clock.advance(10);
      for (const release of held) release();
      // One more request: a window lasts at least twice the long-term latency (10 ms).
      const extra = shedder.admit({ p: 5 }) as Release;
      clock.advance(10);
      extra();
    };
    finish(2); // the first probe (at 8) ends: slow start from 8
    expect(shedder.stats().limit).toBe(8);
    finish(2); // 2 of 8 in flight, the limit refused one, no queue: grows (1.5×, slow start)
    expect(shedder.stats().limit).toBe(12);
  });

  it("keeps a reserve during a probe: covered levels admitted against the limit the probe resumes", () => {
    const clock = new ManualClock(0);
    const shedder = new Shedder<{ p: number }>({
      limit: "adaptive",
      adaptive: { minSamples: 1, windowMs: 10, minLimit: 4, initialLimit: 20, probeIntervalMs: 1000 },
      reserve: { 0: 0.75 },
      priority: (r) => r.p,
      clock,
    });
    // Leave slow start: the first probe ends (limit 20), then a window queues (4× the latency).
    let release = shedder.admit({ p: 5 }) as Release;
    clock.advance(10);
    release();
    expect(shedder.stats().limit).toBe(20);
    release = shedder.admit({ p: 5 }) as Release;
    clock.advance(40);
    release();
    expect(shedder.stats().limit).toBe(10); // cut, at most halved; slow start over
    // The next completion past 1000 ms starts a probe at minLimit 4.
    clock.set(1100);
    release = shedder.admit({ p: 5 }) as Release;
    clock.advance(10);
    release();
    expect(shedder.stats().limit).toBe(4);
    // The flood gets the probe's share (4 − 3 = 1 slot); critical requests the limit the probe
    // resumes (10: the 20 before the cut is over a probe interval old): 9 more.
    const flood = shedder.admit({ p: 5 });
    expect(flood).toBeTypeOf("function");
    expect(shedder.admit({ p: 5 })).toBeUndefined();
    let critical = 0;
    while (shedder.admit({ p: 0 }) !== undefined) critical++;
    expect(critical).toBe(9);
    expect(shedder.stats().shedByPriority[0]).toBe(1);
  });

  it("lets a cut reach the reserve's levels only once it has lasted a probe interval", () => {
    const limit = new AdaptiveLimit(
      { ...params, minSamples: 1, windowMs: 10, minLimit: 4, initialLimit: 40, probeIntervalMs: 500 },
      0,
      () => 0.5,
    );
    limit.completed(10, 0, 10); // the first probe ends: 40, slow start; the next probe at 510
    limit.started(40);
    limit.completed(40, 10, 50); // queued: cut to 20, slow start over
    expect([limit.current(), limit.steady()]).toEqual([20, 40]);
    // Every 20 ms a window queued at 2× the long-term 10 ms: the limit falls to minLimit, the
    // reserve's levels keep the highest limit of the last 500 ms.
    let t = 50;
    const window = () => {
      limit.started(limit.current());
      limit.completed(20, t, t + 20);
      t += 20;
    };
    while (t < 490) window();
    expect([limit.current(), limit.steady()]).toEqual([4, 40]);
    // Past 510 the 40 has left the interval, and a probe runs: the reserve falls to the highest
    // limit since 20 ms after the cut.
    while (t < 650) window();
    expect(limit.steady()).toBeLessThan(20);
  });

  it("keeps the reserve's slots when the flood holds more than its share after the limit fell", () => {
    const clock = new ManualClock(0);
    const shedder = new Shedder<{ p: number }>({
      limit: "adaptive",
      adaptive: { minSamples: 1, windowMs: 10, minLimit: 4, initialLimit: 40, probeIntervalMs: 200 },
      reserve: { 0: 0.5 },
      priority: (r) => r.p,
      clock,
    });
    const window = (rtt: number) => {
      const release = shedder.admit({ p: 0 });
      expect(release).toBeTypeOf("function");
      clock.advance(rtt);
      (release as Release)();
    };
    window(10); // the first probe ends: 40, slow start
    // The flood fills its half of 40 with requests that run long (a dependency slowed down).
    const flood: Release[] = [];
    for (let r = shedder.admit({ p: 5 }); r !== undefined; r = shedder.admit({ p: 5 })) flood.push(r as Release);
    expect(flood).toHaveLength(20);
    // Every window queues: the limit falls to minLimit, and after a probe interval (200 ms) so
    // does the limit the reserve is a share of. The flood still holds its 20.
    // (Where the limit stands then depends on the probe's jitter, unseeded Math.random: a probe
    // at minLimit, or the limit growing again from it once a probe re-learned 20 ms as unloaded.)
    for (let i = 0; i < 25; i++) window(20);
    const limit = shedder.stats().limit as number;
    expect(limit).toBeLessThan(10);
    const steady = shedder.steadyLimit as number;
    expect(steady).toBeLessThan(10);
    // Priority 0 still finds the reserve's half (or more) of the steady limit: the flood counts
    // at its share of the limit (e.g. 2 of 4), not at its 20.
    const floodShare = limit - Math.ceil(limit / 2);
    const critical: Release[] = [];
    for (let r = shedder.admit({ p: 0 }); r !== undefined; r = shedder.admit({ p: 0 })) critical.push(r as Release);
    expect(critical).toHaveLength(steady - floodShare);
    expect(critical.length).toBeGreaterThanOrEqual(Math.ceil(steady / 2));
    expect(shedder.admit({ p: 5 })).toBeUndefined();
    for (const release of [...flood, ...critical]) release(false);
    expect(shedder.inFlight).toBe(0);
  });

  it("admits covered levels against maxLimit during slow start (a flood's first windows shed no critical request)", () => {
    const shedder = new Shedder<{ p: number }>({
      limit: "adaptive",
      adaptive: { maxLimit: 50 },
      reserve: { 0: 0.5 },
      priority: (r) => r.p,
      clock: new ManualClock(0),
    });
    expect(shedder.stats().limit).toBe(4);
    let flood = 0;
    while (shedder.admit({ p: 5 }) !== undefined) flood++;
    expect(flood).toBe(2);
    let critical = 0;
    while (shedder.admit({ p: 0 }) !== undefined) critical++;
    expect(critical).toBe(48);
  });

  it("samples finished requests only: a release(false) (aborted, failed) moves nothing", () => {
    const clock = new ManualClock(0);
    const shedder = new Shedder({
      limit: "adaptive",
      adaptive: { minSamples: 1, windowMs: 10, initialLimit: 20 },
      clock,
    });
    const aborted = shedder.admit({}) as Release; // no store: never a promise
    clock.advance(20);
    aborted(false);
    expect(shedder.stats().limit).toBe(4); // still probing: no sample came
    const done = shedder.admit({}) as Release;
    clock.advance(20);
    done();
    expect(shedder.stats()).toMatchObject({ limit: 20, inFlight: 0, admitted: 2 });
    done();
    expect(shedder.stats().inFlight).toBe(0);
  });
});
