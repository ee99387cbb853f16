// The Fastify migration side by side: the same app once with @fastify/rate-limit and once with
// sluice's plugin as docs/migrate/fastify-rate-limit.md configures it (`headers: "legacy"`,
// a first-hit window), sent the same requests. Status codes, which request is refused and the
// `x-ratelimit-*` / `retry-after` headers must agree; `x-ratelimit-reset` is the seconds left on
// both (it was an epoch second on sluice's side: a client sleeping that many seconds slept for
// decades). The two plugins read their own clocks, so a reset may differ by the one second a
// boundary between their two readings can cross.
import Fastify, { type FastifyInstance, type FastifyPluginAsync } from "fastify";
import { rateLimit } from "sluice/fastify";
import { afterEach, describe, expect, test } from "vitest";

// Imported by a name the type checker does not follow: @fastify/rate-limit's type declarations
// augment Fastify's `rateLimit` members, as sluice's do, and one program cannot hold both.
const PEER = "@fastify/rate-limit";
const { default: peerRateLimit } = (await import(PEER)) as {
  default: FastifyPluginAsync<{ max: number; timeWindow: number }>;
};

const LEGACY = ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after"] as const;

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

async function served(register: (app: FastifyInstance) => Promise<void>): Promise<FastifyInstance> {
  const app = Fastify();
  apps.push(app);
  await register(app);
  app.get("/", async () => "ok");
  await app.ready();
  return app;
}

/** One answer reduced to what a client of either plugin reads. */
async function answer(app: FastifyInstance) {
  const res = await app.inject({ method: "GET", url: "/", remoteAddress: "203.0.113.9" });
  const headers: Record<string, string | undefined> = {};
  for (const name of LEGACY) {
    const v = res.headers[name];
    headers[name] = v === undefined ? undefined : String(v);
  }
  return { status: res.statusCode, headers };
}

describe("@fastify/rate-limit → sluice/fastify with headers: 'legacy'", () => {
  test.each([
    [3, 10_000, 6],
    [5, 60_000, 8],
    [1, 2_000, 3],
  ])("max %i per %i ms: the same statuses and headers over %i requests", async (max, windowMs, requests) => {
    const peer = await served(async (app) => {
      await app.register(peerRateLimit, { max, timeWindow: windowMs });
    });
    const ours = await served(async (app) => {
      await app.register(rateLimit, {
        spec: { algorithm: "fixed-window", limit: max, windowMs, anchor: "first" },
        headers: "legacy",
      });
    });
    let refused = 0;
    for (let i = 0; i < requests; i++) {
      const a = await answer(peer);
      const b = await answer(ours);
      expect(b.status, `request ${i + 1}`).toBe(a.status);
      if (a.status === 429) refused++;
      expect(b.headers["x-ratelimit-limit"]).toBe(a.headers["x-ratelimit-limit"]);
      expect(b.headers["x-ratelimit-remaining"]).toBe(a.headers["x-ratelimit-remaining"]);
      for (const name of ["x-ratelimit-reset", "retry-after"] as const) {
        expect(b.headers[name] === undefined, `${name} present on both, request ${i + 1}`).toBe(
          a.headers[name] === undefined,
        );
        if (a.headers[name] === undefined) continue;
        const seconds = Number(b.headers[name]);
        // Seconds left, never an epoch second.
        expect(seconds).toBeLessThanOrEqual(Math.ceil(windowMs / 1000));
        expect(Math.abs(seconds - Number(a.headers[name]))).toBeLessThanOrEqual(1);
      }
    }
    expect(refused).toBe(requests - max);
  });
});
