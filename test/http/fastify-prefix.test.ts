// Fastify's `register(plugin, { prefix })`: Fastify ignores a prefix for a skip-override plugin,
// so sluice honours it itself, by the matched route's pattern: routes under the prefix are
// limited, others are not, and a client cannot slip past by varying case or slashes.
import Fastify from "fastify";
import { rateLimit } from "sluice/fastify";
import { describe, expect, test } from "vitest";

// Anchored at the first hit: a clock-aligned minute could roll over between two requests.
const SPEC = { algorithm: "fixed-window", limit: 1, windowMs: 60_000, anchor: "first" } as const;

async function statuses(app: ReturnType<typeof Fastify>, urls: string[]): Promise<number[]> {
  const out: number[] = [];
  for (const url of urls) out.push((await app.inject({ method: "GET", url })).statusCode);
  return out;
}

describe("Fastify prefix", () => {
  test("limits only the routes under the prefix", async () => {
    const app = Fastify({ routerOptions: { caseSensitive: false, ignoreDuplicateSlashes: true } });
    app.register(rateLimit, { spec: SPEC, prefix: "/api" });
    for (const path of ["/api", "/api/users/:id", "/apix", "/other"]) app.get(path, async () => "ok");
    expect(await statuses(app, ["/api/users/1", "/api/users/2"])).toEqual([200, 429]);
    // Other spellings of the same route are the same route: still limited.
    expect(await statuses(app, ["/API/users/3", "//api//users/4", "/api"])).toEqual([429, 429, 429]);
    // Not under the prefix: never limited.
    expect(await statuses(app, ["/apix", "/apix", "/other", "/other"])).toEqual([200, 200, 200, 200]);
    await app.close();
  });

  test("a prefix inside a prefixed context adds up; a bad prefix is refused at registration", async () => {
    const app = Fastify();
    app.register(
      async (child) => {
        child.register(rateLimit, { spec: SPEC, prefix: "/v1/" });
        child.get("/v1/a", async () => "ok");
        child.get("/b", async () => "ok");
      },
      { prefix: "/api" },
    );
    expect(await statuses(app, ["/api/v1/a", "/api/v1/a", "/api/b", "/api/b"])).toEqual([200, 429, 200, 200]);
    await app.close();
    const bad = Fastify();
    bad.register(rateLimit, { spec: SPEC, prefix: "api" });
    await expect(bad.ready()).rejects.toThrow(/`prefix` must be a path starting with "\/" \(got "api"\)/);
  });
});
