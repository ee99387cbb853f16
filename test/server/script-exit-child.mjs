// A script that is done must exit (issue 35, point 12), written as a user writes one from the
// docs, on the built package and a Redis client of its own, which it quits at the end without
// store.close() (or throttle.close()). Args: client use url prefix
//   client: ioredis | iovalkey | node-redis | glide
//   use:    deny     - a limiter until a denial (the deny cache subscribes where it can)
//           lease    - a concurrency limiter: a lease, a denial, release() and renew()
//           throttle - createThrottle (rate 2 an hour, concurrency 1) runs 3 jobs: the third
//                      waits for the rate, is denied, and is then dropped by maxWaitMs
// An optional fifth arg, late-open, holds the fleet queue's opening until quit() (see below).
// Prints one JSON line with what happened, then quits its client; the test asserts it exits.
import { createLimiter, createThrottle } from "../../dist/index.js";
import { RedisStore } from "../../dist/stores/redis/index.js";

const [kind, use, url, prefix, mode] = process.argv.slice(2);
const { hostname, port } = new URL(url);
let client;
let quit;
if (kind === "ioredis" || kind === "iovalkey") {
  const { Redis } = await import(kind);
  client = new Redis(url);
  quit = () => client.quit();
  // mode late-open (ioredis, iovalkey): the fleet queue's subscription is answered only once quit() was called (a
  // loaded machine, where opening it took longer than every job's maxWaitMs and the 1 s a
  // settling job waits for its calls), and each store command written after QUIT is counted:
  // one such command made ioredis's own quit() reject, and the script exit with code 1.
  if (mode === "late-open") {
    let opened;
    const gate = new Promise((resolve) => {
      opened = resolve;
    });
    const duplicate = client.duplicate;
    client.duplicate = function (...args) {
      const sub = duplicate.apply(this, args);
      const subscribe = sub.subscribe;
      sub.subscribe = (...a) => subscribe.apply(sub, a).then((r) => gate.then(() => r));
      return sub;
    };
    let quitting = false;
    let late = 0;
    for (const name of ["evalsha", "eval"]) {
      const send = client[name];
      client[name] = function (...a) {
        if (quitting) late++;
        return send.apply(this, a);
      };
    }
    quit = () => {
      quitting = true;
      const done = client.quit();
      opened();
      return done;
    };
    process.on("exit", () => {
      if (late > 0) {
        process.stderr.write(`${late} store command(s) written after QUIT\n`);
        process.exitCode = 3;
      }
    });
  }
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
    // An hour's window: three jobs scheduled within ms straddled a minute's edge now and then
    // (its third then ran in the next window, and none was dropped by maxWaitMs).
    rate: { algorithm: "fixed-window", limit: 2, windowMs: 3_600_000 },
    concurrency: 1,
  });
  const outcomes = await Promise.allSettled(
    [1, 2, 3].map((n) => throttle.schedule(async () => n, { maxWaitMs: Number(process.env.WAIT_MS ?? 300) })),
  );
  report = { outcomes: outcomes.map((o) => o.status), stats: throttle.stats() };
}
process.stdout.write(`${JSON.stringify(report)}\n`);
await quit();
