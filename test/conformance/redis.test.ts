// The store conformance kit (sluice/testing) on RedisStore: standalone with ioredis and
// node-redis, and a 3-master Cluster started here with both clients. Each case gets its own
// key prefix; the failure case runs against a client for a port nobody listens on.
import { Cluster } from "ioredis";
import { createCluster } from "redis";
import { RedisStore } from "sluice/redis";
import { storeConformance } from "sluice/testing";
import { afterAll, beforeAll, describe } from "vitest";
import { runCases } from "../support/conformance.ts";
import { startCluster, type TestCluster } from "../support/redis-cluster.ts";
import { deadIoredis, noRedis, standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("store conformance (standalone)");

type Client = ConstructorParameters<typeof RedisStore>[0]["client"];
/** A store on `client()` with a fresh prefix; `denyCache` as users leave it (on) unless given. */
const storeOn =
  (client: () => Client, label: string, denyCache = true) =>
  () =>
    new RedisStore({ client: client(), prefix: uniquePrefix(`kit-${label}`), expiryGraceMs: 600_000, denyCache });
/** A store whose client talks to a port nobody listens on (it fails every call at once). */
const failing = () => {
  const client = deadIoredis();
  return Object.assign(new RedisStore({ client, prefix: uniquePrefix("kit-dead"), timeoutMs: 200 }), { dead: client });
};
const disposeDead = (store: RedisStore) => (store as { dead?: { disconnect(): void } }).dead?.disconnect();

describe.skipIf(redis === undefined)("RedisStore conformance, standalone", () => {
  const clients = useStandaloneClients(redis);
  runCases(
    storeConformance({
      name: "RedisStore (ioredis)",
      create: storeOn(() => clients.io, "io"),
      failing,
      dispose: disposeDead,
    }),
  );
  runCases(storeConformance({ name: "RedisStore (node-redis)", create: storeOn(() => clients.node, "node") }));
  // Without the deny cache every case passes.
  runCases(
    storeConformance({
      name: "RedisStore (ioredis, denyCache: false)",
      create: storeOn(() => clients.io, "nc", false),
    }),
  );
});

const cluster: TestCluster | undefined = await startCluster().catch((error: unknown) => {
  if (process.env.CI) throw error;
  console.warn(`cluster could not start: ${String(error)}`);
  return undefined;
});
if (cluster === undefined) noRedis("store conformance (cluster)");

describe.skipIf(cluster === undefined)("RedisStore conformance, Cluster", () => {
  const ports = cluster?.ports ?? [];
  let io: Cluster;
  let node: ReturnType<typeof createCluster>;
  beforeAll(async () => {
    io = new Cluster(ports.map((port) => ({ host: "127.0.0.1", port })));
    await io.ping();
    node = createCluster({ rootNodes: ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })) });
    await node.connect();
  });
  afterAll(async () => {
    io?.disconnect();
    await node?.close();
    await cluster?.dispose();
  });
  runCases(storeConformance({ name: "RedisStore (ioredis Cluster)", create: storeOn(() => io, "cio") }));
  runCases(storeConformance({ name: "RedisStore (node-redis Cluster)", create: storeOn(() => node, "cnode") }));
});
