// When a pause ends, a local queue's key cools down for as long as the pause lasted: its jobs
// start one at a time. Found by an attack from outside: with a rate that admits bursts well above
// the upstream's limit (a fixed window of 1000/s against an upstream of 3 per 300 ms answering a
// bare 429), every waiting job went at once when each pause ended and every one past the limit got
// its 429: 30 429s after the first pause for 18 jobs (now 4). The fleet queues cool down by the
// same rule (coolDownEnd, src/core/fleet-queue.ts): pause-end-storm-fleet.test.ts (Redis) and
// pause-end-storm-hosted.test.ts (ClusterStore, SharedMemoryStore).
import { createThrottle } from "sluice";
import { describe, expect, it } from "vitest";

describe("the end of a pause does not release the whole queue at once", () => {
  it("after the first pause, about one 429 per pause", {
    timeout: 20_000,
  }, async () => {
    const WINDOW_MS = 300;
    const LIMIT = 3;
    const start = Date.now();
    const counts = new Map<number, number>();
    const sends: { t: number; status: number }[] = [];
    let firstPauseEnd = Number.POSITIVE_INFINITY;
    const upstream = async (): Promise<Response> => {
      const t = Date.now();
      const w = Math.floor((t - start) / WINDOW_MS);
      const n = (counts.get(w) ?? 0) + 1;
      counts.set(w, n);
      const status = n > LIMIT ? 429 : 200;
      sends.push({ t, status });
      await new Promise((resolve) => setTimeout(resolve, 2));
      return new Response(status === 200 ? "ok" : "slow down", { status });
    };
    const throttle = createThrottle({
      rate: { algorithm: "fixed-window", limit: 1000, windowMs: 1000 },
      defaultPauseMs: WINDOW_MS,
      retries: 100,
      fetch: upstream as typeof fetch,
    });
    throttle.on("pause", ({ ms }) => {
      if (firstPauseEnd === Number.POSITIVE_INFINITY) firstPauseEnd = Date.now() + ms;
    });
    const JOBS = 18;
    const statuses = await Promise.all(
      Array.from({ length: JOBS }, (_, i) =>
        throttle.fetch(`http://upstream.invalid/${i}`, undefined, { key: "api" }).then((r) => r.status),
      ),
    );
    await throttle.close();
    expect(statuses.every((s) => s === 200)).toBe(true);
    const later = sends.filter((s) => s.t >= firstPauseEnd);
    const later429 = later.filter((s) => s.status === 429).length;
    // JOBS / LIMIT windows are needed at least; allow two 429s per pause after the first.
    const pausesAfter = Math.ceil(JOBS / LIMIT);
    console.log(`429s after the first pause: ${later429} over ${later.length} requests`);
    expect(later429).toBeLessThanOrEqual(2 * pausesAfter);
  });
});
