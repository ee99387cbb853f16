// A script that is done must exit (issue 35, point 12), written as a user writes one from the
// docs, on the built package and a Redis client of its own, which it quits at the end without
// store.close() (or throttle.close()). Args: client use url prefix
//   client: ioredis | iovalkey | node-redis | glide
//   use:    deny     - a limiter until a denial (the deny cache subscribes where it can)
//           lease    - a concurrency limiter: a lease, a denial, release() and renew()
//           throttle - createThrottle (rate 2 a minute, concurrency 1) runs 3 jobs: the third
//                      waits for the rate, is denied, and is then dropped by maxWaitMs
// Prints one JSON line with what happened, then quits its client; the test asserts it exits.
import { createLimiter, createThrottle } from "../../dist/index.js";
import { RedisStore } from "../../dist/stores/redis/index.js";

const [kind, use, url, prefix] = process.argv.slice(2);
const { hostname, port } = new URL(url);
let client;
let quit;
if (kind === "ioredis" || kind === "iovalkey") {
  const { Redis } = await import(kind);
  client = new Redis(url);
  quit = () => client.quit();
} else if (kind === "node-redis") {
  const { createClient } = await import("redis");
  client = createClient({ url });
  await client.connect();
  quit = () => client.quit();
} else {
  const { GlideClient } = await import("@valkey/valkey-glide");
  client = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }] });
  quit = async () => client.close();
}
const store = new RedisStore({ client, prefix, timeoutMs: 10_000 });
let report;
if (use === "deny") {
  const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 60_000 }, { store, name: "exit" });
  await limiter.tryAcquire("k");
  let denied = 0;
  for (let i = 0; i < 50 && store.cachedDenials === 0; i++) {
    if (!(await limiter.tryAcquire("k")).allowed) denied++;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  report = { denied, cached: store.cachedDenials };
} else if (use === "lease") {
  const limiter = createLimiter({ algorithm: "concurrency", limit: 1, leaseMs: 60_000 }, { store, name: "lease" });
  const held = await limiter.tryAcquire("k");
  const refused = await limiter.tryAcquire("k");
  const renewed = await held.renew();
  await held.release();
  const after = await limiter.tryAcquire("k");
  await after.release();
  report = { held: held.allowed, refused: !refused.allowed, renewed: renewed.allowed, after: after.allowed };
} else {
  const throttle = createThrottle({
    name: "exit",
    store,
    rate: { algorithm: "fixed-window", limit: 2, windowMs: 60_000 },
    concurrency: 1,
  });
  const outcomes = await Promise.allSettled(
    [1, 2, 3].map((n) => throttle.schedule(async () => n, { maxWaitMs: Number(process.env.WAIT_MS ?? 300) })),
  );
  report = { outcomes: outcomes.map((o) => o.status), stats: throttle.stats() };
}
process.stdout.write(`${JSON.stringify(report)}\n`);
await quit();
