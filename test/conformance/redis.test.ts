// The store conformance kit (sluice/testing) on RedisStore: standalone with ioredis and
// node-redis, and a 3-master Cluster started here with both clients. Each case gets its own
// key prefix; the failure case runs against a client for a port nobody listens on.
import { RedisStore } from "sluice/redis";
import { storeConformance } from "sluice/testing";
import { describe } from "vitest";
import { runCases } from "../support/conformance.ts";
import { deadIoredis, standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";
import { clusterRedis, useClusterClients } from "../support/redis-topologies.ts";

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

const cluster = await clusterRedis("store conformance (cluster)");

describe.skipIf(cluster === undefined)("RedisStore conformance, Cluster", () => {
  const clients = useClusterClients(cluster);
  runCases(storeConformance({ name: "RedisStore (ioredis Cluster)", create: storeOn(() => clients.io, "cio") }));
  runCases(storeConformance({ name: "RedisStore (node-redis Cluster)", create: storeOn(() => clients.node, "cnode") }));
});
