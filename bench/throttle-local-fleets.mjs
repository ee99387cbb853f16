// The throttle's fleet queue without Redis: 4 node:cluster worker processes on a ClusterStore
// (test/throttle/fleet-cluster-child.mjs), 4 unrelated processes on a ClusterStore `socket`
// (fleet-socket-child.mjs: PM2's shape, one of them hosting) and 4 worker threads on a
// SharedMemoryStore (fleet-threads-child.mjs), each keeping 8 jobs of 2-12 ms scheduled, FLEET_JOBS jobs per
// worker, limited to RATE starts a second (gcra, burst 1) and 8 at once; `fleet: false` (the
// per-process queues polling every pollMs) beside each. Throughput as a share of the configured
// rate (starts over the span from the first start to the last) and each worker's share of the
// starts while all had demand (spread: (max - min) / mean).
// Run with: npm run build && node bench/throttle-local-fleets.mjs   Knobs: BENCH_RATE, FLEET_JOBS,
// FLEET_LIMIT_MS (a fleet not done by then is reported as not finished; default 180 s).
// (Beside bench/throttle.mjs, whose fleet part is on Redis.)
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";

const RATE = Number(process.env.BENCH_RATE ?? 200);
const JOBS = Number(process.env.FLEET_JOBS ?? 300);
const LIMIT_MS = Number(process.env.FLEET_LIMIT_MS ?? 180_000);

function run(child, fleet) {
  const options = {
    rate: { algorithm: "gcra", limit: RATE, periodMs: 1000, burst: 1 },
    concurrency: 8,
    leaseMs: 10_000,
    fleet,
  };
  const script = fileURLToPath(new URL(`../test/throttle/${child}`, import.meta.url));
  const proc = spawn(process.execPath, [script, "steady", JSON.stringify(options), String(JOBS), "7000", "8"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let text = "";
  proc.stdout.setEncoding("utf8");
  proc.stdout.on("data", (d) => (text += d));
  // A fleet that has not finished after LIMIT_MS is reported as such (its members are ended too).
  const timer = setTimeout(() => {
    text += "TIMEOUT\n";
    proc.kill("SIGTERM");
  }, LIMIT_MS);
  return new Promise((resolve, reject) =>
    proc.on("close", (code) => {
      clearTimeout(timer);
      if (text.endsWith("TIMEOUT\n") || code === 0) resolve(text);
      else reject(new Error(`${child} exited ${code}`));
    }),
  );
}

function measure(text) {
  const starts = [];
  for (const line of text.split("\n")) {
    const [p, kind, , at] = line.split(" ");
    if (kind === "S") starts.push({ proc: Number(p), at: Number(at) });
  }
  const t = starts.map((s) => s.at);
  const perSecond = ((t.length - 1) * 1000) / (Math.max(...t) - Math.min(...t));
  const until = Math.min(...[0, 1, 2, 3].map((p) => Math.max(...starts.filter((s) => s.proc === p).map((s) => s.at))));
  const share = [0, 1, 2, 3].map((p) => starts.filter((s) => s.proc === p && s.at <= until).length);
  const mean = share.reduce((a, b) => a + b, 0) / 4;
  return { perSecond, share, spread: (Math.max(...share) - Math.min(...share)) / mean };
}

console.log(`node ${process.version}, load average ${loadavg()[0].toFixed(2)}`);
console.log(`4 workers × ${JOBS} jobs, limit ${RATE} starts/s, 8 at once:`);
for (const [label, child] of [
  ["ClusterStore", "fleet-cluster-child.mjs"],
  ["ClusterStore socket", "fleet-socket-child.mjs"],
  ["SharedMemoryStore", "fleet-threads-child.mjs"],
]) {
  for (const fleet of [true, false]) {
    const text = await run(child, fleet);
    if (text.endsWith("TIMEOUT\n")) {
      console.log(
        `  ${label.padEnd(20)} ${fleet ? "fleet queue " : "fleet: false"} did not finish within ${LIMIT_MS} ms`,
      );
      continue;
    }
    const m = measure(text);
    console.log(
      `  ${label.padEnd(20)} ${fleet ? "fleet queue " : "fleet: false"} ${((m.perSecond / RATE) * 100).toFixed(1)}% of the limit; shares ${m.share} (spread ${(m.spread * 100).toFixed(0)}%)`,
    );
  }
}
