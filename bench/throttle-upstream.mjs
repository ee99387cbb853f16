// Obeying the upstream, side by side: fleets of 4 processes on one Redis (REDIS_URL, default
// 127.0.0.1:6379) each send UPSTREAM_JOBS requests to an upstream simulator admitting
// UPSTREAM_LIMIT a second (test/support/upstream-server.mjs, answering the rest 429 with
// Retry-After, or the RateLimit field), through (test/throttle-upstream/fleet-child.mjs):
// - sluice: createThrottle + throttle.fetch on a RedisStore, a rate 5× the upstream's;
//   with `concurrency` 1 and 4, with the rate alone, and with the rate alone plus `adaptive`;
//   and the rate alone at 2× the upstream (its starts 100 ms apart at the default limit: longer
//   than the time a loaded fleet takes to hear a 429), beside bottleneck's `minTime` alike;
// - bottleneck clustered on the same Redis, the same limits (maxConcurrent, minTime), 429s retried
//   after their Retry-After through its `failed` event;
// - plain retries: no limiter, one request at a time per process, a 429 waits its Retry-After.
// - the burst shape (an attack's): 3 processes × 12 requests, a gcra of 40/s with its full burst
//   against an upstream of 5/s: what a pause's end releases (the key's cool-down: one at a time).
// For each: requests sent, 429s, windows (pauses) that saw a 429, the most 429s in one window,
// admitted requests a second as a share of the upstream's limit, how long after its window's first
// 429 each later 429 reached the upstream (the fleet's time to hear a 429), and (sluice) requests a
// process sent while it knew the key paused (a pause that failed to hold: 0 expected).
// Run with: npm run build && node bench/throttle-upstream.mjs
// Knobs: UPSTREAM_JOBS (default 25), UPSTREAM_LIMIT (default 10), UPSTREAM_HEADER (retry-after |
// ratelimit | x-ratelimit; x-ratelimit is read by sluice only), UPSTREAM_ROWS (a regular
// expression: only the fleets whose label matches).
import { loadavg } from "node:os";
import { runFleet } from "../test/throttle-upstream/run-fleet.mjs";

const JOBS = Number(process.env.UPSTREAM_JOBS ?? 25);
const LIMIT = Number(process.env.UPSTREAM_LIMIT ?? 10);
const HEADER = process.env.UPSTREAM_HEADER ?? "retry-after";
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const RATE = LIMIT * 5;
const gcra = { algorithm: "gcra", limit: RATE, periodMs: 1000, burst: 1 };
const gcraBurst = { ...gcra, burst: 10 };
const gcraSlow = { ...gcra, limit: LIMIT * 2 };
const ROWS = new RegExp(process.env.UPSTREAM_ROWS ?? "");

const runs = [
  ["sluice, concurrency 1", "sluice", { rate: gcra, concurrency: 1 }],
  ["bottleneck, maxConcurrent 1", "bottleneck", { maxConcurrent: 1, minTime: 1000 / RATE }],
  ["sluice, concurrency 4", "sluice", { rate: gcra, concurrency: 4 }],
  ["bottleneck, maxConcurrent 4", "bottleneck", { maxConcurrent: 4, minTime: 1000 / RATE }],
  ["sluice, rate alone", "sluice", { rate: gcra }],
  ["sluice, rate alone (burst 10)", "sluice", { rate: gcraBurst }],
  ["sluice, rate alone (burst 10), adaptive", "sluice", { rate: gcraBurst, adaptive: true }],
  ["sluice, rate alone, adaptive", "sluice", { rate: gcra, adaptive: true }],
  ["bottleneck, minTime alone", "bottleneck", { minTime: 1000 / RATE }],
  ["sluice, rate alone at 2× the upstream", "sluice", { rate: gcraSlow }],
  ["bottleneck, minTime alone at 2× the upstream", "bottleneck", { minTime: 1000 / (LIMIT * 2) }],
  ["plain retries", "plain", {}],
  [
    "sluice, burst shape: gcra 40/s (burst 40) vs 5/s, 3 processes × 12",
    "sluice",
    { rate: { algorithm: "gcra", limit: 40, periodMs: 1000 } },
    { processes: 3, jobs: 12, limit: 5 },
  ],
];

console.log(
  `4 processes × ${JOBS} requests, upstream ${LIMIT}/s answering 429 with ${HEADER}; limiters at ${RATE}/s; load average ${loadavg()[0].toFixed(1)}`,
);
console.log(
  "| fleet | requests | 429s | windows with a 429 | most 429s in a window | admitted/s (share of the upstream's limit) | callers failed | later 429s: ms after the window's first (min/median/max) | sent while the sender knew the key paused |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
for (const [label, mode, options, shape = {}] of runs.filter(([label]) => ROWS.test(label))) {
  const r = await runFleet({
    mode,
    options,
    redisUrl: REDIS_URL,
    prefix: `bench-upstream-${process.pid}-${mode}-${Math.random().toString(36).slice(2, 8)}`,
    jobs: JOBS,
    limit: LIMIT,
    header: HEADER,
    ...shape,
  });
  const limit = shape.limit ?? LIMIT;
  const perSecond = (r.ok / r.elapsedMs) * 1000;
  const failed = r.statuses.filter((s) => s !== 200).length;
  const lag = r.after429Ms.sort((a, b) => a - b);
  const lags = lag.length === 0 ? "-" : `${lag[0]}/${lag[Math.floor(lag.length / 2)]}/${lag[lag.length - 1]}`;
  console.log(
    `| ${label} | ${r.requests} | ${r.tooMany} | ${r.windowsWith429} | ${r.most429InAWindow} | ${perSecond.toFixed(1)} (${((perSecond / limit) * 100).toFixed(0)}%) | ${failed} | ${lags} | ${mode === "sluice" ? r.sentPaused : "-"} |`,
  );
}
