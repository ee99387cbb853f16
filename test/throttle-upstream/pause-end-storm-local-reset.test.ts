// A throttle deciding its own starts (one process, its own MemoryStore) against an upstream that
// says when its window resets (X-RateLimit-Reset: a pause of what is left of its window, often a
// few hundred ms, and a cool-down as short). Before, the local queue cooled the key down but kept
// the burst its rate refilled during the pause and the cool-down: when the cool-down ended,
// several jobs went at once into the upstream's next window, each past its limit a 429. Now, as on
// the fleet queues (coolDownEnd's rule, chargeCoolDownBurst), the rate resumes at its steady pace
// at the cool-down's end. The upstream admits 3 per window of 500 ms on a grid anchored at its
// first request and answers the rest 429 with `X-RateLimit-Reset` in epoch milliseconds (told
// apart by size), so each pause lasts exactly what is left of its window.
import { createServer } from "node:http";
import { createThrottle } from "sluice";
import { describe, expect, it } from "vitest";
import type { UpstreamEntry } from "../support/upstream-server.mjs";

const WINDOW_MS = 500;
const LIMIT = 3;
const JOBS = 15;

/** The upstream (see the head); an admitted request is answered after `latencyMs`. */
async function startUpstream(latencyMs: number) {
  const log: UpstreamEntry[] = [];
  let start = -1;
  const used = new Map<number, number>();
  const server = createServer((req, res) => {
    const at = Date.now();
    if (start < 0) start = at;
    const window = Math.floor((at - start) / WINDOW_MS);
    const n = (used.get(window) ?? 0) + 1;
    used.set(window, n);
    const job = req.headers["x-job"] as string | undefined;
    if (n > LIMIT) {
      log.push({ at, status: 429, job, window });
      const end = start + (window + 1) * WINDOW_MS;
      res.writeHead(429, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(end) }).end("slow down");
      return;
    }
    log.push({ at, status: 200, job, window });
    setTimeout(() => res.end("ok"), latencyMs);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { url: `http://127.0.0.1:${port}/`, log, close };
}

describe("one process, gcra 20/s (burst 20) against an upstream of 3 per 500 ms answering X-RateLimit-Reset", () => {
  it("after the first window, at most one 429 a window but once", { timeout: 30_000 }, async () => {
    const upstream = await startUpstream(100);
    const throttle = createThrottle({ rate: { algorithm: "gcra", limit: 20, periodMs: 1000 }, retries: 20 });
    let statuses: number[];
    try {
      statuses = await Promise.all(
        Array.from({ length: JOBS }, (_, i) =>
          throttle.fetch(upstream.url, { headers: { "x-job": String(i) } }, { key: "api" }).then(async (r) => {
            await r.text();
            return r.status;
          }),
        ),
      );
    } finally {
      await throttle.close();
      await upstream.close();
    }
    expect(statuses.every((s) => s === 200)).toBe(true);
    // The 429s of each window after the first 429's (that window holds the start's own burst).
    const first = upstream.log.find((e) => e.status === 429)?.window ?? 0;
    const per = new Map<number, number>();
    for (const e of upstream.log) {
      if (e.status === 429 && e.window > first) per.set(e.window, (per.get(e.window) ?? 0) + 1);
    }
    const perPause = [...per.entries()].sort((a, b) => a[0] - b[0]).map(([, n]) => n);
    const all = upstream.log.filter((e) => e.status === 429).length;
    console.log(`429s a window after the first: ${JSON.stringify(perPause)} (${all} in all)`);
    expect(perPause.length).toBeGreaterThan(0);
    // Each window's first 429 pauses the key; a second one is a request already sent (a loaded
    // machine's timers: rarely, once a run at most).
    expect(perPause.filter((n) => n > 1).length).toBeLessThanOrEqual(1);
    expect(Math.max(...perPause)).toBeLessThanOrEqual(2);
  });
});
