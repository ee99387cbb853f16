import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT, run, type Served, serve, tempDir } from "../cli/helpers.ts";
import { rlsClient } from "./envoy-client.ts";

const tmp = tempDir();
beforeAll(ensureBuilt);
afterAll(tmp.cleanup);

const limit = (n: number, unit = "hour") =>
  `domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: ${unit}, requests_per_unit: ${n} }\n`;

/** The gRPC address a `sluice serve` child printed. */
function grpcAddress(s: Served): string {
  const m = /envoy grpc\s+(\S+)/.exec(s.stdout());
  if (m === null) throw new Error(`no gRPC address in:\n${s.stdout()}`);
  return m[1] as string;
}

async function remainingOf(address: string, user: string): Promise<number | undefined> {
  const client = rlsClient(address);
  try {
    const r = await client.ask("app", [{ entries: [["user", user]] }]);
    return r.overall_code === "OVER_LIMIT" ? -1 : r.statuses[0]?.limit_remaining;
  } finally {
    client.close();
  }
}

describe("sluice serve --grpc-port --envoy-config (the real bin)", () => {
  it("serves Envoy's API beside HTTP, reloads on change and SIGHUP, keeps the last good config", async () => {
    const dir = tmp.dir;
    const path = tmp.file("app.yaml", limit(3));
    const s = await serve(["--grpc-port", "0", "--envoy-config", dir]);
    try {
      const address = grpcAddress(s);
      expect(s.stdout()).toMatch(
        /envoy grpc\s+127\.0\.0\.1:\d+ \(envoy\.service\.ratelimit\.v3\.RateLimitService, 1 domains\)/,
      );
      expect(await remainingOf(address, "u")).toBe(2);
      writeFileSync(path, limit(5));
      await s.waitForLog(/envoy config reloaded \(file changed\): 1 domains/);
      // The raised limit keeps the count: 1 used of 5.
      expect(await remainingOf(address, "u")).toBe(3);
      writeFileSync(path, `${limit(5)}    bogus: 1\n`);
      await s.waitForLog(
        /envoy config reload failed \(file changed\): .*app\.yaml: app: descriptors\[0\]: unknown key `bogus`/,
      );
      expect(await remainingOf(address, "u")).toBe(2);
      const health = async () => ((await (await fetch(`${s.url}/healthz`)).json()) as { config: unknown }).config;
      expect(await health()).toMatchObject({ lastReloadOk: false });
      writeFileSync(path, limit(9));
      s.child.kill("SIGHUP");
      await s.waitForLog(/envoy config reloaded \(SIGHUP\)/);
      expect(await remainingOf(address, "u")).toBe(5);
      expect(await health()).toMatchObject({ lastReloadOk: true });
    } finally {
      expect(await s.stop()).toBe(0);
    }
    expect(s.log()).toMatch(/closed after serving/);
  });

  it("takes domains from the rules file too", async () => {
    const rules = tmp.file(
      "rules.yaml",
      `rules:\n  api: { algorithm: fixed-window, limit: 5, windowMs: 1m }\ndomains:\n  - ${limit(2).replace(/\n/g, "\n    ").trimEnd()}\n`,
    );
    const checked = await run(["check-config", rules]);
    expect(checked.status).toBe(0);
    expect(checked.stdout).toMatch(/^api: .*\nenvoy app\.user: 2 per hour \(/);
    const s = await serve(["--config", rules, "--grpc-port", "0"]);
    try {
      expect(await remainingOf(grpcAddress(s), "v")).toBe(1);
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      expect(metrics).toContain('sluice_envoy_total_hits_total{path="app.user"} 1');
    } finally {
      await s.stop();
    }
  });

  it("refuses --envoy-config without --grpc-port, and a bad config at start", async () => {
    const r = await run(["serve", "--envoy-config", tmp.dir]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--envoy-config needs --grpc-port/);
    const bad = tmp.file(
      "bad.yml",
      "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: week, requests_per_unit: 1 }\n",
    );
    const r2 = await run(["serve", "--grpc-port", "0", "--envoy-config", bad]);
    expect(r2.status).not.toBe(0);
    expect(r2.stderr).toMatch(/bad\.yml: app\.user: invalid rate limit unit/);
  });

  it("with --redis, two services share each descriptor's counter", async () => {
    const prefix = `sluice-envoy-test:${randomUUID()}:`;
    const redis = new Redis("redis://127.0.0.1:6379", { maxRetriesPerRequest: 1 });
    const file = tmp.file("redis.yaml", limit(3));
    const args = ["--grpc-port", "0", "--envoy-config", file, "--redis", "redis://127.0.0.1:6379", "--prefix", prefix];
    const [a, b] = await Promise.all([serve(args), serve(args)]);
    try {
      expect(await remainingOf(grpcAddress(a), "r")).toBe(2);
      expect(await remainingOf(grpcAddress(b), "r")).toBe(1);
      expect(await remainingOf(grpcAddress(a), "r")).toBe(0);
      expect(await remainingOf(grpcAddress(b), "r")).toBe(-1);
      expect((await redis.keys(`${prefix}*`)).length).toBeGreaterThan(0);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
  });

  it("check-config --envoy-config validates envoyproxy/ratelimit files (a directory or one file) and names errors", async () => {
    const fixtures = join(ROOT, "test/server/envoy-fixtures");
    const dir = await run(["check-config", "--envoy-config", fixtures]);
    expect(dir.status).toBe(0);
    expect(dir.stdout).toContain("envoy messaging.to_number: 100 per day");
    expect(dir.stdout).toContain("envoy edge.ldap: unlimited");
    // The shape of envoyproxy/ratelimit's examples/ratelimit/config files: a `---` document,
    // nested descriptors, a blocked value, unlimited, shadow mode.
    const example = tmp.file(
      "rl.yaml",
      "---\ndomain: rl\ndescriptors:\n  - key: foo\n    rate_limit: { unit: minute, requests_per_unit: 2 }\n    descriptors:\n" +
        "      - key: bar\n        value: banned\n        rate_limit: { unit: minute, requests_per_unit: 0 }\n" +
        "      - key: bay\n        rate_limit: { unlimited: true }\n" +
        "      - key: baz\n        value: shady\n        rate_limit: { unit: minute, requests_per_unit: 1 }\n        shadow_mode: true\n",
    );
    const one = await run(["check-config", "--envoy-config", example]);
    expect(one.status).toBe(0);
    expect(one.stdout.split("\n").filter((l) => l !== "")).toEqual([
      "envoy rl.foo: 2 per minute (at most 2 per clock-aligned minute (up to 4 across a window boundary))",
      "envoy rl.foo.bar_banned: 0 per minute (blocks everything)",
      "envoy rl.foo.baz_shady: 1 per minute (at most 1 per clock-aligned minute (up to 2 across a window boundary)), shadow mode",
      "envoy rl.foo.bay: unlimited",
    ]);
    // Without the flag, such a file is not a rules file: the message says what it expected.
    expect((await run(["check-config", example])).stderr).toContain("unknown top-level key `domain`");
    const bad = tmp.file(
      "bad.yaml",
      "domain: rl\ndescriptors:\n  - key: foo\n    rate_limit: { unit: fortnight, requests_per_unit: 2 }\n",
    );
    const refused = await run(["check-config", "--envoy-config", bad]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("bad.yaml");
  });
});
