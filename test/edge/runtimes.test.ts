// The built package under Bun and Deno: the core (every algorithm, a composite, first-hit
// windows, the service, replay) decides a seeded trace exactly as under Node, RedisStore
// over @upstash/redis, the edge runtimes' Redis client, decides it as the memory store does,
// through the local Upstash REST bridge to a real Redis, and sluice/threads holds one exact
// limit across worker threads. A runtime whose binary cannot start
// is skipped with a visible notice, and under CI that is a failure.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { findRedis, type SharedRedis, uniquePrefix } from "../support/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "./upstash-bridge.ts";

const FIXTURE = join(ROOT, "test/edge/fixtures/core-trace.mjs");
const THREADS_FIXTURE = join(ROOT, "test/edge/fixtures/threads.mjs");

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function exec(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" } });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    // A runtime that hangs must not hang the suite.
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", (error) => {
      clearTimeout(timer);
      resolve({ status: null, stdout, stderr: String(error) });
    });
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/**
 * The runtimes and how each runs the fixture. Binaries come from the devDependencies: the
 * linked one, else the platform package's own (there when install scripts did not run).
 */
const RUNTIMES = {
  bun: {
    bins: ["node_modules/.bin/bun", `node_modules/@oven/bun-${process.platform}-${process.arch}/bin/bun`],
    args: (fixture: string) => [fixture],
  },
  deno: {
    bins: ["node_modules/.bin/deno", `node_modules/@deno/${process.platform}-${process.arch}-glibc/deno`],
    args: (fixture: string) => ["run", "--no-lock", "--allow-read", "--allow-env", "--allow-net", fixture],
  },
} as const;

/** The first of `name`'s binaries that starts; if none does, says so loudly, and under CI fails. */
async function binary(name: keyof typeof RUNTIMES): Promise<string | undefined> {
  const tried: string[] = [];
  for (const bin of RUNTIMES[name].bins) {
    const path = join(ROOT, bin);
    const run = await exec(path, ["--version"]);
    if (run.status === 0) return path;
    tried.push(`${bin}: ${run.stderr.trim().split("\n")[0] || `exit ${run.status}`}`);
  }
  const message = `${name} cannot start here (${tried.join("; ")})`;
  if (process.env.CI) throw new Error(`${message}; CI is set, so this fails instead of skipping`);
  console.warn(`\n${"!".repeat(80)}\n!! SKIPPED: ${message}\n${"!".repeat(80)}\n`);
  return undefined;
}

ensureBuilt();
const redis: SharedRedis | undefined = await findRedis();
const bins = { bun: await binary("bun"), deno: await binary("deno") };
if (redis === undefined) {
  const message = "the Upstash part of the runtime suite needs a Redis (REDIS_URL, 127.0.0.1:6379 or redis-server)";
  if (process.env.CI) throw new Error(message);
  console.warn(`SKIPPED: ${message}`);
}

type Report = Record<string, unknown> & { runtime: string; upstash?: unknown[]; upstashOracle?: unknown[] };

describe("the core under Bun and Deno", () => {
  let bridge: UpstashBridge | undefined;
  let node: Report;

  beforeAll(async () => {
    if (redis !== undefined) bridge = await startUpstashBridge(redis.url);
    const run = await exec(process.execPath, [FIXTURE]);
    expect(run.status, run.stderr).toBe(0);
    node = JSON.parse(run.stdout) as Report;
  });
  afterAll(async () => {
    await bridge?.close();
    await redis?.owned?.dispose();
  });

  for (const name of ["bun", "deno"] as const) {
    it.skipIf(bins[name] === undefined)(
      `${name}: the same decisions as Node, and over @upstash/redis the memory store's`,
      async () => {
        const args = bridge === undefined ? [] : [bridge.url, bridge.token, uniquePrefix(`runtime-${name}`)];
        const run = await exec(bins[name] as string, [...RUNTIMES[name].args(FIXTURE), ...args]);
        expect(run.status, run.stderr).toBe(0);
        const report = JSON.parse(run.stdout.trim().split("\n").pop() ?? "") as Report;
        expect(report.runtime).toBe(name);
        const { runtime: _r, upstash, upstashOracle, ...core } = report;
        const { runtime: _n, ...nodeCore } = node;
        expect(core).toEqual(nodeCore);
        expect((core.limiters as unknown[]).length).toBe(8);
        if (bridge !== undefined) {
          expect(upstash).toHaveLength(4);
          expect(upstash).toEqual(upstashOracle);
          // Denials were among them: the trace reached past the limits, through Redis.
          expect(JSON.stringify(upstash)).toContain('"allowed":false');
        }
      },
    );
  }
});

describe("sluice/threads under Node, Bun and Deno", () => {
  // Four worker threads on one SharedMemoryStore (its memory a shared WebAssembly.Memory, its
  // handle passed in workerData and by postMessage): one exact limit, per key, on every runtime.
  for (const name of ["node", "bun", "deno"] as const) {
    const bin = name === "node" ? process.execPath : bins[name];
    it.skipIf(bin === undefined)(
      `${name}: 4 threads admit exactly the limit, on one key and on each of 50`,
      async () => {
        const args = name === "node" ? [THREADS_FIXTURE] : RUNTIMES[name].args(THREADS_FIXTURE);
        const run = await exec(bin as string, args);
        expect(run.status, run.stderr).toBe(0);
        const report = JSON.parse(run.stdout.trim().split("\n").pop() ?? "") as Record<string, unknown>;
        expect(report).toEqual({ runtime: name, shared: 100, fewest: 3, most: 3 });
      },
    );
  }
});
