// `RateLimit-Reset` (draft-6 pair, and draft-7's reset=, draft-11's t=) may be an epoch instant:
// GitLab.com sends "RateLimit-Reset: 1609844400, Unix time". Found by an attack from outside: it
// was read as a delta (1.8e9 s, clamped to `maxPauseMs`, an hour), so "come back in 3 s" stalled
// the key for the whole fleet for an hour, as did an instant already past. Now told apart by size
// as `X-RateLimit-Reset` is (src/throttle/upstream-headers.ts `resetToMs`).
import { createThrottle } from "sluice";
import { describe, expect, it } from "vitest";

describe("RateLimit-Reset given as epoch seconds", () => {
  it("control: X-RateLimit-Reset as epoch seconds pauses until that instant", async () => {
    const throttle = createThrottle({ concurrency: 1 });
    const reset = Math.floor(Date.now() / 1000) + 3;
    const hint = await throttle.observe("x", {
      status: 200,
      headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset) },
    });
    expect(hint.pauseMs).toBeGreaterThan(0);
    expect(hint.pauseMs).toBeLessThanOrEqual(4_000);
    await throttle.close();
  });

  it("RateLimit-Reset as epoch seconds 3 s ahead pauses ≤ 4 s", async () => {
    const throttle = createThrottle({ concurrency: 1 });
    const reset = Math.floor(Date.now() / 1000) + 3;
    const hint = await throttle.observe("k", {
      status: 200,
      headers: { "ratelimit-remaining": "0", "ratelimit-reset": String(reset) },
    });
    await throttle.close();
    expect(hint.pauseMs).toBeLessThanOrEqual(4_000);
  });

  it("RateLimit-Reset as an epoch instant already past does not pause for an hour", async () => {
    const throttle = createThrottle({ concurrency: 1 });
    const reset = Math.floor(Date.now() / 1000) - 30;
    const hint = await throttle.observe("k", {
      status: 200,
      headers: { "ratelimit-remaining": "0", "ratelimit-reset": String(reset) },
    });
    await throttle.close();
    expect(hint.pauseMs).toBeLessThanOrEqual(1_000);
  });
});
