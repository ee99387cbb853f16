// One process of first-burst.test.ts (the built package). Args: redisUrl prefix role delayMs.
//   role "A": opens its throttle (concurrency 1) with job a1, which holds the one slot; on the
//             line "a2" it schedules a2 and then lets a1 end.
//   role "B": its client is connected, its throttle never used; its Redis connections after the
//             first (its subscriber's) go through a local proxy that holds each one `delayMs`
//             before connecting it (a subscriber that opens slowly, as on a loaded machine). On
//             the line "b1" it schedules b1 and prints "scheduled".
// Prints "ready", then "S <job> <ms>" at each start (the system clock both processes share), and
// exits once its jobs are done.
import net from "node:net";
import { createInterface } from "node:readline";
import { Redis } from "ioredis";
import { createThrottle, systemClock } from "../../dist/index.js";
import { RedisStore } from "../../dist/stores/redis/index.js";

const [url, prefix, role, delayMs] = process.argv.slice(2);
const log = (line) => process.stdout.write(`${line}\n`);
const target = new URL(url);
const redisPort = Number(target.port || 6379);
let port = redisPort;
let proxy;
if (role === "B") {
  let first = true;
  proxy = net.createServer((inbound) => {
    const open = () => {
      const outbound = net.connect(redisPort, target.hostname);
      inbound.pipe(outbound).pipe(inbound);
      const end = () => {
        inbound.destroy();
        outbound.destroy();
      };
      inbound.on("error", end).on("close", end);
      outbound.on("error", end).on("close", end);
    };
    inbound.pause();
    if (first) open();
    else setTimeout(open, Number(delayMs));
    first = false;
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  port = proxy.address().port;
}
const client = new Redis({ host: target.hostname, port, maxRetriesPerRequest: 1 });
await client.ping();
const store = new RedisStore({ client, prefix, timeoutMs: 10_000 });
const throttle = createThrottle({ name: "first-burst", store, clock: systemClock, concurrency: 1 });
const job = (name, until) =>
  throttle.schedule(async () => {
    log(`S ${name} ${Date.now()}`);
    await until;
  });
const jobs = [];
let endA1;
if (role === "A") {
  let started;
  const a1Started = new Promise((r) => (started = r));
  jobs.push(
    throttle.schedule(async () => {
      log(`S a1 ${Date.now()}`);
      started();
      await new Promise((r) => (endA1 = r));
    }),
  );
  await a1Started;
}
log("ready");
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line === "a2") {
    jobs.push(job("a2"));
    endA1();
  } else if (line === "b1") {
    jobs.push(job("b1"));
    log("scheduled");
  }
  break;
}
await Promise.all(jobs);
await throttle.close();
await store.close();
client.disconnect();
log("done");
process.exit(0); // the proxy's server and its connections
