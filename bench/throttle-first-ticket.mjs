// F2 (issue 32): how late a process's first job reaches the fleet queue on Redis. Each sample is
// a fresh process: its client connected (a PING answered), a throttle never used, then one job
// scheduled on an idle key; lateness = the store's decision instant of its grant (the `start`
// event's `at`, Redis TIME) − Date.now() at `schedule` (one machine, one clock). Before the fix
// the first enqueue waited for the subscriber connection to open; now it goes out at once.
// Builds are compared side by side, alternating, in one run.
// Run: npm run build && node bench/throttle-first-ticket.mjs
// Knobs: FIRST_DISTS=dist,<another build directory>  FIRST_ROUNDS=15  REDIS_URL
import { fork } from "node:child_process";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

const self = fileURLToPath(import.meta.url);
const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

if (process.env.FIRST_ROLE === "child") {
  const dist = (p) => import(new URL(p, `file://${resolve(process.env.FIRST_DIST)}/`).href);
  const { Redis } = await import("ioredis");
  const { createThrottle, systemClock } = await dist("./index.js");
  const { RedisStore } = await dist("./stores/redis/index.js");
  const client = new Redis(url);
  await client.ping();
  const store = new RedisStore({ client, prefix: `first32-${process.pid}:`, timeoutMs: 10_000 });
  const throttle = createThrottle({ name: "first", store, clock: systemClock, concurrency: 4 });
  let at;
  throttle.on("start", (e) => (at = e.at));
  const scheduled = Date.now();
  await throttle.schedule(async () => {});
  await throttle.close();
  await store.close();
  client.disconnect();
  process.send({ late: at - scheduled }, () => process.exit(0));
} else {
  const dists = (process.env.FIRST_DISTS ?? "dist").split(",");
  const rounds = Number(process.env.FIRST_ROUNDS ?? 15);
  const samples = new Map(dists.map((d) => [d, []]));
  for (let r = 0; r < rounds; r++) {
    for (const d of dists) {
      const late = await new Promise((done, fail) => {
        const c = fork(self, [], { env: { ...process.env, FIRST_ROLE: "child", FIRST_DIST: d }, stdio: "ignore" });
        c.on("message", (m) => done(m.late));
        c.on("exit", (code) => code !== 0 && fail(new Error(`child exited ${code}`)));
      });
      samples.get(d).push(late);
    }
  }
  for (const [d, xs] of samples) {
    xs.sort((a, b) => a - b);
    const q = (p) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
    console.log(
      `${d}: first ticket's lateness (ms) p50 ${q(0.5)} p90 ${q(0.9)} max ${xs[xs.length - 1]} (n ${xs.length}, load ${loadavg()[0].toFixed(1)})`,
    );
  }
}
