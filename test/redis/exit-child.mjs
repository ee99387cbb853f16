// A script that is done must exit (issue 35). It uses the built package as users do, on a
// client of its own. Args: client mode topology target prefix
//   client:   ioredis | node-redis
//   mode:     deny  - a denial (the deny cache subscribes on a duplicate connection), then the
//                     script quits its client, without store.close()
//             once  - one allowed check, then it quits its client, without store.close()
//             close - a denial, then store.close() and it quits its client
//   topology: standalone (target: a redis:// URL) | cluster (target: comma-separated ports)
//             | sentinel, ioredis only (target: comma-separated sentinel ports; master "mymaster")
// Prints one JSON line ({ cached }: denials the deny cache held before the client was quit)
// when its work is done; the test then asserts that the process exits.
import { createLimiter } from "../../dist/index.js";
import { RedisStore } from "../../dist/stores/redis/index.js";

const [kind, mode, topology, target, prefix] = process.argv.slice(2);
const ports = target.split(",").map(Number);
let client;
if (kind === "ioredis") {
  const { Redis, Cluster } = await import("ioredis");
  if (topology === "cluster") client = new Cluster(ports.map((port) => ({ host: "127.0.0.1", port })));
  else if (topology === "sentinel")
    client = new Redis({ sentinels: ports.map((port) => ({ host: "127.0.0.1", port })), name: "mymaster" });
  else client = new Redis(target);
} else {
  const { createClient, createCluster } = await import("redis");
  if (topology === "cluster")
    client = createCluster({ rootNodes: ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })) });
  else client = createClient({ url: target });
  await client.connect();
}
const store = new RedisStore({ client, prefix, timeoutMs: 10_000 });
const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 60_000 }, { store, name: "exit" });
const first = await limiter.tryAcquire("k");
if (!first.allowed) throw new Error(`the first check was not allowed: ${JSON.stringify(first)}`);
if (mode !== "once") {
  // Denials until the deny cache holds one: its subscription is then live.
  for (let i = 0; i < 200 && store.cachedDenials === 0; i++) {
    const d = await limiter.tryAcquire("k");
    if (d.allowed) throw new Error("expected a denial");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
const cached = store.cachedDenials;
if (mode === "close") await store.close();
await client.quit();
process.stdout.write(`${JSON.stringify({ cached })}\n`);
