// What the Redis benches share: a private redis-server started for the run (so INFO
// commandstats and INFO cpu count only the run's own commands, and no other process's commands
// queue ahead of them), the server's counters, the machine's load average and medians.

import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a redis-server of its own (no persistence) and waits for it: `{ url, admin, stop }`,
 * `admin` an ioredis client for INFO and cleanup. `args` are more server options.
 */
export async function privateRedis(args = []) {
  const dir = mkdtempSync(join(tmpdir(), "sluice-bench-"));
  const port = await freePort();
  const server = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...args],
    { stdio: "ignore" },
  );
  const url = `redis://127.0.0.1:${port}`;
  const admin = new Redis(url, { retryStrategy: () => 50 });
  admin.on("error", () => {}); // refused until the server is up
  for (let i = 0; i < 100; i++) {
    try {
      await admin.ping();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url,
    admin,
    stop() {
      admin.disconnect();
      server.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A private redis-server run under valgrind's callgrind: `{ url, admin, counted, stop }`.
 * `counted(work)` is the instructions the server executed while `work` ran (callgrind zeroed
 * before, dumped after); `stop(keep)` kills it and removes its folder unless `keep` (the dumps,
 * whose paths `counted` prints when `keep` was set, for callgrind_annotate).
 */
export async function callgrindRedis({ keep = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "sluice-callgrind-"));
  const port = await freePort();
  const server = spawn(
    "valgrind",
    [`--tool=callgrind`, `--callgrind-out-file=${dir}/out`, "redis-server", "--port", String(port)].concat([
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--dir",
      dir,
    ]),
    { stdio: "ignore" },
  );
  const url = `redis://127.0.0.1:${port}`;
  // Under valgrind the server takes seconds to start.
  const admin = new Redis(url, { retryStrategy: () => 200, maxRetriesPerRequest: null });
  admin.on("error", () => {});
  await admin.ping();
  return {
    url,
    admin,
    async counted(work) {
      execFileSync("callgrind_control", ["-z", String(server.pid)], { stdio: "ignore" });
      await work();
      execFileSync("callgrind_control", ["-d", String(server.pid)], { stdio: "ignore" });
      const dumps = readdirSync(dir).filter((f) => /^out\.\d+$/.test(f));
      const last = dumps.sort((a, b) => Number(a.split(".")[1]) - Number(b.split(".")[1])).at(-1);
      if (keep) console.log(`dump: ${join(dir, last)}`);
      return Number(/^summary: (\d+)/m.exec(readFileSync(join(dir, last), "utf8"))?.[1]);
    },
    stop() {
      admin.disconnect();
      server.kill("SIGKILL");
      if (!keep) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Calls and Redis µs by command name (INFO commandstats; INFO's own calls left out). */
export async function commandStats(admin) {
  const out = {};
  const info = await admin.info("commandstats");
  for (const m of info.matchAll(/cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/g)) {
    if (m[1] !== "info") out[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  }
  return out;
}

/** The change from `before` to `after` (commandStats), summed: { calls, usec }, and by command. */
export function statsDelta(before, after) {
  const by = {};
  let calls = 0;
  let usec = 0;
  for (const [name, a] of Object.entries(after)) {
    const b = before[name] ?? { calls: 0, usec: 0 };
    if (a.calls === b.calls) continue;
    by[name] = { calls: a.calls - b.calls, usec: a.usec - b.usec };
    calls += a.calls - b.calls;
    usec += a.usec - b.usec;
  }
  return { calls, usec, by };
}

/** The server's CPU seconds, user + system (INFO cpu). */
export async function serverCpuSeconds(admin) {
  const info = await admin.info("cpu");
  const field = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1]);
  return field("used_cpu_sys") + field("used_cpu_user");
}

/** The 1, 5 and 15 minute load averages, as text. */
export const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

/** The median of `values`. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Resolves once an ioredis client is connected. */
export const ready = (client) =>
  new Promise((resolve) => (client.status === "ready" ? resolve() : client.once("ready", resolve)));

/**
 * Runs `check(key)` for about `ms` milliseconds (no new check starts after it), `inFlight` at a
 * time, over `keys` in a strided cycle from `start`: `{ n, seconds, latencies }` (ms each).
 * Slices are bounded by time, not by a count: a slice much shorter than the scheduler's period
 * (a few tens of ms on a loaded machine) measures who was preempted, not who is faster.
 */
export async function timedSlice(check, keys, start, ms, inFlight) {
  const latencies = [];
  let next = 0;
  const started = performance.now();
  const until = started + ms;
  const worker = async () => {
    while (performance.now() < until) {
      const i = next++;
      const key = keys[((start + i) * 7919) % keys.length];
      const t0 = performance.now();
      await check(key);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { n: latencies.length, seconds: (performance.now() - started) / 1000, latencies };
}

/** The `q` quantile of ascending `sorted`. */
export const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];

/** `min / median / max` of `values`, 2 decimals. */
export function spread(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return `${sorted[0].toFixed(2)} / ${median(sorted).toFixed(2)} / ${sorted.at(-1).toFixed(2)}`;
}
