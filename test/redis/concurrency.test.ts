// Concurrency against a real Redis: checks racing in one process and in several processes
// never admit more than the limit (each decision is one atomic script run).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createLimiter, ManualClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("concurrency");

const CHILD = fileURLToPath(new URL("./child-limiter.mjs", import.meta.url));
const BUILT = fileURLToPath(new URL("../../dist/stores/redis/index.js", import.meta.url));

describe.skipIf(redis === undefined)("Redis concurrency", () => {
  const url = redis?.url ?? "";
  const clients = useStandaloneClients(redis);

  beforeAll(async () => {
    // The child processes run the built package: rebuilt here when src/ is newer than dist/,
    // so they never run stale code (ensureBuilt serialises builds across test files).
    ensureBuilt();
  });

  for (const client of ["ioredis", "node-redis"] as const) {
    it(`10,000 concurrent checks against a limit of 100 admit exactly 100 (${client}, injected clock)`, async () => {
      // 10,000 checks sent at once queue ~300 script calls: on a loaded machine the last can
      // take longer than the default 1 s, and timeouts are not what this test is about.
      const store = new RedisStore({
        client: client === "ioredis" ? clients.io : clients.node,
        prefix: uniquePrefix("conc"),
        timeoutMs: 10_000,
      });
      const limiter = createLimiter(
        { algorithm: "fixed-window", limit: 100, windowMs: 60_000 },
        {
          store,
          clock: new ManualClock(1_000_000),
        },
      );
      const decisions = await Promise.all(Array.from({ length: 10_000 }, () => limiter.tryAcquire("hot")));
      expect(decisions.filter((d) => d.failure !== undefined)).toEqual([]);
      expect(decisions.filter((d) => d.allowed).length).toBe(100);
      // Remaining counts down exactly once per admitted request: no two saw the same state.
      const remaining = decisions.filter((d) => d.allowed).map((d) => d.remaining);
      expect(new Set(remaining).size).toBe(100);
    });
  }

  it("10,000 concurrent checks on Redis TIME admit exactly the limit, across algorithms", async () => {
    const store = new RedisStore({ client: clients.io, prefix: uniquePrefix("conc-time"), timeoutMs: 10_000 });
    for (const spec of [
      { algorithm: "sliding-log", limit: 100, windowMs: 3_600_000 },
      { algorithm: "token-bucket", capacity: 100, refillPerSecond: 0.0001 },
      { algorithm: "gcra", limit: 100, periodMs: 3_600_000 },
    ] as const) {
      const limiter = createLimiter(spec, { store });
      const decisions = await Promise.all(Array.from({ length: 10_000 }, () => limiter.tryAcquire("hot")));
      expect(decisions.filter((d) => d.allowed).length, spec.algorithm).toBe(100);
    }
  });

  it("several processes sharing one Redis limit admit exactly the limit, never more", async () => {
    expect(existsSync(BUILT), "dist/ was not built").toBe(true);
    const prefix = uniquePrefix("procs");
    const spec = JSON.stringify({ algorithm: "sliding-log", limit: 150, windowMs: 600_000 });
    const children = Array.from({ length: 4 }, () =>
      spawn(process.execPath, [CHILD, url, prefix, spec, "200", "16"], { stdio: ["pipe", "pipe", "inherit"] }),
    );
    const lines = children.map((child) => {
      const out: string[] = [];
      let buffer = "";
      const waiters: Array<() => void> = [];
      child.stdout.on("data", (chunk) => {
        buffer += chunk;
        let at = buffer.indexOf("\n");
        while (at >= 0) {
          out.push(buffer.slice(0, at));
          buffer = buffer.slice(at + 1);
          at = buffer.indexOf("\n");
        }
        for (const w of waiters.splice(0)) w();
      });
      const nth = async (n: number) => {
        while (out.length <= n) await new Promise<void>((r) => waiters.push(r));
        return out[n] as string;
      };
      return nth;
    });
    await Promise.all(lines.map((nth) => nth(0)));
    for (const child of children) child.stdin.write("go\n");
    const results = (await Promise.all(lines.map((nth) => nth(1)))).map(
      (line) => JSON.parse(line) as { allowed: number; denied: number; failed: number },
    );
    expect(results.map((r) => r.failed)).toEqual([0, 0, 0, 0]);
    expect(results.reduce((sum, r) => sum + r.allowed, 0)).toBe(150);
    expect(results.reduce((sum, r) => sum + r.allowed + r.denied, 0)).toBe(800);
  });
});
