// The package as users install it: the built files behind the `exports` map, the types beside
// them, and the bin. Other suites import the sources (see vitest.config.ts); this one does not.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";

const root = new URL("..", import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(`${root}package.json`, "utf8"));

function run(code: string): string {
  return execFileSync(process.execPath, ["--input-type=module", "-e", code], { cwd: root, encoding: "utf8" });
}

beforeAll(() => {
  if (!existsSync(`${root}dist/index.js`)) execFileSync("npm", ["run", "build"], { cwd: root, stdio: "ignore" });
}, 120_000);

describe("package exports", () => {
  it("every subpath resolves to built ESM with types beside it", () => {
    for (const [subpath, target] of Object.entries(pkg.exports as Record<string, { types: string; default: string }>)) {
      if (subpath === "./package.json") continue;
      expect(existsSync(`${root}${target.default}`), target.default).toBe(true);
      expect(existsSync(`${root}${target.types}`), target.types).toBe(true);
    }
  });

  it("the seed's example runs against the built package", () => {
    const out = run(`
      import { createLimiter, ManualClock, classify } from "sluice";
      const clock = new ManualClock();
      const limiter = createLimiter({ type: "sliding", limit: 2, windowMs: 1000 }, clock);
      const seen = [0, 1, 2, 1000].map((t) => { clock.set(t); return limiter.tryAcquire("user").allowed; });
      console.log(JSON.stringify([seen, classify([0, 1, 2], { type: "sliding", limit: 2, windowMs: 1000 })]));
    `);
    expect(JSON.parse(out)).toEqual([
      [true, true, false, true],
      [true, true, false],
    ]);
  });

  it("the public names are exported from each entry", () => {
    const out = run(`
      const names = {};
      for (const entry of ["sluice", "sluice/redis", "sluice/cluster", "sluice/http", "sluice/express", "sluice/fastify", "sluice/hono", "sluice/koa", "sluice/nest", "sluice/otel", "sluice/client", "sluice/threads", "sluice/postgres", "sluice/testing", "sluice/store"]) {
        names[entry] = Object.keys(await import(entry)).sort();
      }
      console.log(JSON.stringify(names));
    `);
    const names = JSON.parse(out) as Record<string, string[]>;
    expect(names.sluice).toEqual(
      expect.arrayContaining([
        "ManualClock",
        "systemClock",
        "createLimiter",
        "RateLimiterService",
        "MemoryStore",
        "replay",
        "classify",
        "SluiceError",
        "ConfigError",
        "ArgumentError",
        "UnknownRuleError",
        "DuplicateRuleError",
        "StoreError",
        "WaitTimeoutError",
      ]),
    );
    expect(names["sluice/redis"]).toContain("RedisStore");
    expect(names["sluice/cluster"]).toEqual(expect.arrayContaining(["ClusterStore", "startClusterStore"]));
    expect(names["sluice/http"]).toContain("rateLimit");
    expect(names["sluice/client"]).toEqual(["createClient"]);
    expect(names["sluice/threads"]).toEqual(["SharedMemoryStore"]);
    expect(names["sluice/postgres"]).toEqual(["PostgresStore", "STORE_FAILURE_WARNING"]);
    expect(names["sluice/testing"]).toEqual(
      expect.arrayContaining(["storeConformance", "serviceConformance", "RuleOracle"]),
    );
    expect(names["sluice/store"]).toEqual(
      expect.arrayContaining(["decideRule", "createRecord", "storesNewRecord", "recordToText", "recordFromText"]),
    );
    for (const entry of ["sluice/express", "sluice/fastify", "sluice/hono", "sluice/koa"])
      expect(names[entry]).toContain("rateLimit");
    expect(names["sluice/nest"]).toEqual(
      expect.arrayContaining(["SluiceModule", "SluiceGuard", "RateLimit", "SkipRateLimit", "RateLimitException"]),
    );
    expect(names["sluice/otel"]).toEqual(
      expect.arrayContaining(["instrument", "instrumentStore", "instrumentMiddleware"]),
    );
  });

  it("the bin answers --help", () => {
    const out = execFileSync(process.execPath, [`${root}${pkg.bin.sluice}`, "--help"], { encoding: "utf8" });
    expect(out).toMatch(/replay/);
    expect(out).toMatch(/serve/);
  });
});
