// One process of a fleet calling an upstream with its own limit (test/support/upstream-server.mjs),
// for test/throttle-upstream/upstream-fleet.test.ts and bench/throttle-upstream.mjs. Args:
//   mode redisUrl prefix upstreamUrl jobs optionsJSON
// mode:
//   sluice      createThrottle on a RedisStore (the built package), every job a throttle.fetch;
//   plain       no limiter: one request at a time, a 429 waits its Retry-After (or 1 s) and retries;
//   bottleneck  bottleneck clustered on the same Redis (`datastore: "ioredis"`, id = prefix), a
//               429 retried after its Retry-After through bottleneck's `failed` event (its
//               documented retry), one job at a time per process as `maxConcurrent` allows.
// Waits for a line on stdin so all processes start together; prints `D <json>` with its
// statuses (what each caller finally got), the 429s it saw, its pauses, and (sluice) the requests
// it sent while it knew the key paused, its pid and when it heard each pause. (sluice: each
// request's `x-job` header ends "@<ms sent>".)
import Bottleneck from "bottleneck";
import { createThrottle, systemClock } from "../../dist/index.js";
import { RedisStore } from "../../dist/stores/redis/index.js";

const [mode, url, prefix, upstream, jobs, optionsJson] = process.argv.slice(2);
const options = JSON.parse(optionsJson ?? "{}");
const n = Number(jobs);
let seen429 = 0;
let pauses = 0;
/** sluice: requests sent while this process knew its key paused for 10 ms more (none, if pauses hold), and its pause's end. */
let sentPaused = 0;
let pausedUntil = 0;
/** sluice: when this process heard each pause (its own 429's, or the store's word), by Date.now(). */
const heard = [];

/** Retry-After (seconds) or the RateLimit field's t, in ms; 1 s when the answer says nothing. */
function backoffMs(response) {
  const ra = response.headers.get("retry-after");
  if (ra !== null) return Number(ra) * 1000;
  const rl = /;t=(\d+)/.exec(response.headers.get("ratelimit") ?? "");
  if (rl !== null) return Number(rl[1]) * 1000;
  return 1000;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function sluice() {
  const store = await RedisStore.connect({ url, prefix, timeoutMs: 10_000 });
  const counting = (input, init) => {
    // 10 ms of slack: the store grants on its own clock (Redis TIME), a few ms off this one.
    if (systemClock.now() < pausedUntil - 10) sentPaused++;
    // The instant it is sent rides on its job's header ("job@ms"): a request the upstream reads
    // late (a loaded machine) still counts where it was sent (pause-storm-count.ts).
    const headers = { ...init?.headers, "x-job": `${init?.headers?.["x-job"]}@${Date.now()}` };
    return fetch(input, { ...init, headers }).then((r) => {
      if (r.status === 429) seen429++;
      return r;
    });
  };
  const throttle = createThrottle({
    name: "upstream",
    store,
    clock: systemClock,
    retries: 20,
    fetch: counting,
    ...options,
  });
  throttle.on("pause", ({ ms }) => {
    heard.push(Date.now());
    pauses++;
    pausedUntil = Math.max(pausedUntil, systemClock.now() + ms);
  });
  return {
    run: (i) =>
      throttle.fetch(upstream, { headers: { "x-job": `${process.pid}-${i}` } }, { key: "upstream" }).then(async (r) => {
        await r.text();
        return r.status;
      }),
    close: async () => {
      await throttle.close();
      await store.close();
    },
  };
}

async function plain() {
  return {
    run: async (i) => {
      for (;;) {
        const r = await fetch(upstream, { headers: { "x-job": `${process.pid}-${i}` } });
        await r.text();
        if (r.status !== 429) return r.status;
        seen429++;
        await sleep(backoffMs(r));
      }
    },
    close: async () => {},
  };
}

async function bottleneck() {
  const { hostname, port } = new URL(url);
  const limiter = new Bottleneck({
    id: prefix,
    datastore: "ioredis",
    clearDatastore: false,
    clientOptions: { host: hostname, port: Number(port) },
    ...options,
  });
  // bottleneck's retry: a "failed" listener returning a delay schedules the job again after it.
  limiter.on("failed", (error) => (error.retryAfterMs === undefined ? undefined : error.retryAfterMs));
  limiter.on("error", () => {});
  await limiter.ready();
  return {
    run: (i) =>
      limiter.schedule(async () => {
        const r = await fetch(upstream, { headers: { "x-job": `${process.pid}-${i}` } });
        await r.text();
        if (r.status === 429) {
          seen429++;
          throw Object.assign(new Error("429"), { retryAfterMs: backoffMs(r) });
        }
        return r.status;
      }),
    close: () => limiter.disconnect(),
  };
}

const fleet = await { sluice, plain, bottleneck }[mode]();
process.stdout.write("ready\n");
process.stdin.once("data", async () => {
  // plain: one request at a time per process; the limiters: everything queued at once.
  let results;
  if (mode === "plain") {
    results = [];
    for (let i = 0; i < n; i++) {
      results.push(
        await fleet.run(i).then(
          (value) => ({ status: "fulfilled", value }),
          (reason) => ({ status: "rejected", reason }),
        ),
      );
    }
  } else {
    results = await Promise.allSettled(Array.from({ length: n }, (_, i) => fleet.run(i)));
  }
  await fleet.close();
  const statuses = results.map((r) => (r.status === "fulfilled" ? r.value : String(r.reason)));
  process.stdout.write(`D ${JSON.stringify({ statuses, seen429, pauses, sentPaused, pid: process.pid, heard })}\n`);
  process.exit(0);
});
