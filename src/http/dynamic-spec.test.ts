// `spec` as a function of the request: the compiled-shape cache is bounded, and a shape
// compiled again after eviction finds its state where it left it (the state is in the store,
// named after the shape), so eviction never hands a client a fresh budget.
import { describe, expect, test } from "vitest";
import { ManualClock } from "../core/clock.ts";
import { rateLimitFetch } from "./fetch.ts";
import { SPEC_CACHE_SIZE } from "./target.ts";

const shape = (limit: number) => ({ algorithm: "fixed-window" as const, limit, windowMs: 60_000 });

describe("spec as a function of the request", () => {
  test.each([0, 1_800_000_000_000])(
    "state survives eviction from the bounded shape cache (clock at %d)",
    async (at) => {
      const limit = rateLimitFetch({
        clock: new ManualClock(at),
        key: (request) => request.headers.get("x-user") ?? undefined,
        spec: (request) => shape(Number(request.headers.get("x-limit"))),
      });
      const call = async (user: string, n: number) =>
        (
          await limit(
            new Request("http://x/", { headers: { "x-user": user, "x-limit": String(n) } }),
            () => new Response("ok"),
          )
        ).status;
      expect([await call("a", 1), await call("a", 1)]).toEqual([200, 429]);
      // More distinct shapes than the cache holds: the first shape is evicted and compiled again.
      for (let n = 2; n <= SPEC_CACHE_SIZE + 10; n++) expect(await call("b", n)).toBe(200);
      expect(await call("a", 1)).toBe(429);
      expect((await limit.peek("a", { spec: shape(1) })).allowed).toBe(false);
      await limit.reset("a");
      expect(await call("a", 1)).toBe(200);
    },
  );
});
