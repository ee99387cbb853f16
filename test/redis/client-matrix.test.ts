// The Redis features across the client configurations users actually write (SPEC §14): ioredis
// with its defaults, ioredis with `lazyConnect: true` (never connected by hand), node-redis
// connected, node-redis never connected (the store connects it on its first command), and the
// client `RedisStore.connect` builds. For each, against Redis processes started here:
// - the deny cache goes live (repeats of a denial are answered without Redis);
// - standalone "failover" (the server killed, then back on the same port): checks are answered
//   by policy meanwhile, the first failure emits exactly one SLUICE_STORE_FAILURE warning naming
//   the cause and the policy, and checks and the deny cache come back by themselves;
// - Cluster TRYAGAIN (a batch whose keys are half-migrated): every check is decided by Redis,
//   each counted once.
// Valkey's clients too: iovalkey (an ioredis fork: the same adapter) and valkey-glide's
// GlideClient / GlideClusterClient (no pub/sub on a client sluice did not create: its rows run
// without the deny cache, and check that it is off). Each is skipped, saying so, where the
// package is not installed.
import { Cluster, Redis } from "ioredis";
import { createClient, createCluster } from "redis";
import { createLimiter, type Decision, ManualClock } from "sluice";
import { type RedisClientLike, RedisStore } from "sluice/redis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { within } from "../support/poll.ts";
import { canStartRedis, type OwnedRedis, rawCommand, startOwnedRedis, uniquePrefix } from "../support/redis-server.ts";
import { clusterSeeds, recordingStore, slotFor, startCluster, type TestCluster } from "../support/redis-topologies.ts";

const canStart = await canStartRedis("client matrix");

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A store under test, and whether it is expected to emit the client-options warning. */
interface Made {
  store: RedisStore;
}

/** One client configuration: builds a store on `url` (or cluster seeds) with `options`. */
interface Config {
  name: string;
  standalone(url: string, options: object): Promise<Made>;
  cluster(ports: number[], options: object): Promise<Made>;
  /** The client holds no subscription: the deny cache stays off (valkey-glide). */
  noDenyCache?: true;
  /** Why the row cannot run here (its package is not installed). */
  missing?: string | undefined;
}

/** An optional client package, imported by a name the type checker does not follow. */
async function optional<T>(name: string): Promise<T | undefined> {
  try {
    return (await import(name)) as T;
  } catch {
    console.warn(`client matrix: ${name} is not installed; its rows are skipped`);
    return undefined;
  }
}
/** iovalkey: an ioredis fork with its API. */
const iovalkey = await optional<{ Redis: typeof Redis; Cluster: typeof Cluster }>("iovalkey");
interface GlideClientLike {
  close(): void;
}
interface GlideFactory {
  createClient(options: object): Promise<GlideClientLike>;
}
/** valkey-glide: Valkey's own client (a native binary). */
const glide = await optional<{ GlideClient: GlideFactory; GlideClusterClient: GlideFactory }>("@valkey/valkey-glide");
const hostPort = (url: string) => {
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port) };
};

function keep<T extends { disconnect(): void }>(value: T): T {
  cleanups.push(() => value.disconnect());
  return value;
}

const CONFIGS: Config[] = [
  {
    name: "ioredis defaults",
    standalone: async (url, options) => {
      const client = keep(new Redis(url));
      client.on("error", () => {});
      return { store: new RedisStore({ client, ...options }) };
    },
    cluster: async (ports, options) => {
      const client = keep(new Cluster(clusterSeeds(ports)));
      client.on("error", () => {});
      return { store: new RedisStore({ client, ...options }) };
    },
  },
  {
    name: "ioredis lazyConnect: true, never connected by hand",
    standalone: async (url, options) => {
      const client = keep(new Redis(url, { lazyConnect: true }));
      client.on("error", () => {});
      return { store: new RedisStore({ client, ...options }) };
    },
    cluster: async (ports, options) => {
      const client = keep(new Cluster(clusterSeeds(ports), { lazyConnect: true }));
      client.on("error", () => {});
      return { store: new RedisStore({ client, ...options }) };
    },
  },
  {
    name: "ioredis lazyConnect and enableOfflineQueue: false, never connected by hand",
    standalone: async (url, options) => {
      const client = keep(new Redis(url, { lazyConnect: true, enableOfflineQueue: false }));
      client.on("error", () => {});
      return { store: new RedisStore({ client, ...options }) };
    },
    cluster: async (ports, options) => {
      const client = keep(new Cluster(clusterSeeds(ports), { lazyConnect: true, enableOfflineQueue: false }));
      client.on("error", () => {});
      return { store: new RedisStore({ client, ...options }) };
    },
  },
  {
    name: "node-redis connected",
    standalone: async (url, options) => {
      const client = createClient({ url, socket: { reconnectStrategy: 50 } });
      client.on("error", () => {});
      await client.connect();
      cleanups.push(() => client.destroy());
      return { store: new RedisStore({ client: client as unknown as RedisClientLike, ...options }) };
    },
    cluster: async (ports, options) => {
      const client = createCluster({ rootNodes: ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })) });
      client.on("error", () => {});
      await client.connect();
      cleanups.push(() => client.destroy());
      return { store: new RedisStore({ client: client as unknown as RedisClientLike, ...options }) };
    },
  },
  {
    name: "node-redis never connected (the store connects it)",
    standalone: async (url, options) => {
      const client = createClient({ url, socket: { reconnectStrategy: 50 } });
      cleanups.push(() => (client.isOpen ? client.destroy() : undefined));
      const store = new RedisStore({ client: client as unknown as RedisClientLike, ...options });
      expect(client.isOpen).toBe(false); // nothing happens before the first check
      return { store };
    },
    cluster: async (ports, options) => {
      const client = createCluster({ rootNodes: ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })) });
      cleanups.push(() => (client.isOpen ? client.destroy() : undefined));
      return { store: new RedisStore({ client: client as unknown as RedisClientLike, ...options }) };
    },
  },
  {
    name: "iovalkey defaults",
    missing: iovalkey === undefined ? "iovalkey is not installed" : undefined,
    standalone: async (url, options) => {
      const client = keep(new (iovalkey as { Redis: typeof Redis }).Redis(url));
      client.on("error", () => {});
      return { store: new RedisStore({ client, ...options }) };
    },
    cluster: async (ports, options) => {
      const client = keep(new (iovalkey as { Cluster: typeof Cluster }).Cluster(clusterSeeds(ports)));
      client.on("error", () => {});
      return { store: new RedisStore({ client, ...options }) };
    },
  },
  {
    name: "valkey-glide GlideClient / GlideClusterClient",
    missing: glide === undefined ? "@valkey/valkey-glide is not installed" : undefined,
    noDenyCache: true,
    standalone: async (url, options) => {
      const client = await (glide as { GlideClient: GlideFactory }).GlideClient.createClient({
        addresses: [hostPort(url)],
        requestTimeout: 2000,
      });
      cleanups.push(() => client.close());
      return { store: new RedisStore({ client: client as unknown as RedisClientLike, ...options }) };
    },
    cluster: async (ports, options) => {
      const client = await (glide as { GlideClusterClient: GlideFactory }).GlideClusterClient.createClient({
        addresses: ports.map((port) => ({ host: "127.0.0.1", port })),
        requestTimeout: 2000,
      });
      cleanups.push(() => client.close());
      return { store: new RedisStore({ client: client as unknown as RedisClientLike, ...options }) };
    },
  },
  {
    name: "RedisStore.connect",
    standalone: async (url, options) => {
      const store = await RedisStore.connect({ url, ...options });
      return { store };
    },
    cluster: async (ports, options) => {
      const store = await RedisStore.connect({ cluster: ports.map((p) => `127.0.0.1:${p}`), ...options });
      return { store };
    },
  },
];

/** Calls of the check program (FCALL, EVALSHA, EVAL) a server has run so far. */
async function scriptCalls(port: number): Promise<number> {
  const info = (await rawCommand(port, "INFO commandstats")) ?? "";
  let calls = 0;
  for (const name of ["fcall", "evalsha", "eval"])
    calls += Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return calls;
}

/**
 * Repeats `check` (bounded) until the store's deny cache holds a denial: it went live. With
 * `off` (a client without pub/sub), checks that the denial is Redis's and the cache stays empty.
 */
async function cacheDenial(store: RedisStore, check: () => Promise<Decision>, off = false): Promise<void> {
  if (off) {
    for (let i = 0; i < 3; i++) {
      const d = await check();
      expect([d.allowed, d.failure], "denied by Redis").toEqual([false, undefined]);
    }
    expect(store.cachedDenials, "no deny cache without pub/sub").toBe(0);
    return;
  }
  for (const waiting = within(); waiting() && store.cachedDenials === 0; ) {
    const d = await check();
    expect(d.allowed).toBe(false);
    if (store.cachedDenials === 0) await new Promise((r) => setTimeout(r, 10));
  }
  expect(store.cachedDenials, "the deny cache never went live").toBeGreaterThan(0);
}

/** Collects SLUICE_STORE_FAILURE warnings whose text contains `marker`. */
function failureWarnings(marker: string): string[] {
  const seen: string[] = [];
  const listener = (w: Error & { code?: string }) => {
    if (w.code === "SLUICE_STORE_FAILURE" && w.message.includes(marker)) seen.push(w.message);
  };
  process.on("warning", listener);
  cleanups.push(() => process.off("warning", listener));
  return seen;
}

const SPEC = { algorithm: "fixed-window", limit: 3, windowMs: 3_600_000 } as const;

describe.skipIf(!canStart)("Redis client matrix: standalone", () => {
  let server: OwnedRedis;
  beforeAll(async () => {
    server = (await startOwnedRedis()) as OwnedRedis;
  });
  afterAll(async () => {
    await server?.dispose();
  });

  for (const config of CONFIGS) {
    it.skipIf(config.missing !== undefined)(
      `${config.name}: ${config.noDenyCache ? "the deny cache stays off" : "the deny cache goes live"}; a Redis outage is answered by policy, said once, and recovered from`,
      async () => {
        const prefix = uniquePrefix("matrix");
        const warnings = failureWarnings(prefix);
        // timeoutMs is a work-based bound, not a speed claim: a first check that connects a lazy
        // client, on a machine running two test suites at once, must not be cut off by it.
        const { store } = await config.standalone(server.url, { prefix, timeoutMs: 3_000, breaker: false });
        cleanups.push(() => store.close());
        const clock = new ManualClock(1_800_000_000_000);
        const limiter = createLimiter(SPEC, { store, clock, name: "api" });
        // Decided by Redis from the first check, whatever the client's connection state.
        for (let i = 0; i < 3; i++) expect(await limiter.tryAcquire("abuser")).toMatchObject({ allowed: true });
        await cacheDenial(store, () => limiter.tryAcquire("abuser"), config.noDenyCache);
        const before = await scriptCalls(server.port);
        const repeats = await Promise.all(Array.from({ length: 200 }, () => limiter.tryAcquire("abuser")));
        expect(repeats.every((d) => !d.allowed && d.failure === undefined)).toBe(true);
        if (config.noDenyCache) expect((await scriptCalls(server.port)) - before).toBeGreaterThan(0);
        else expect((await scriptCalls(server.port)) - before).toBeLessThanOrEqual(2);

        // The outage: every check answered by the "deny" policy, one warning for all of them.
        await server.stop();
        const during: Decision[] = [];
        for (let i = 0; i < 5; i++) during.push(await limiter.tryAcquire(`user-${i}`));
        expect(during.map((d) => [d.allowed, d.failure?.policy])).toEqual(during.map(() => [false, "deny"]));
        expect(warnings.length).toBe(1);
        expect(warnings[0]).toContain(`RedisStore (prefix "${prefix}") failed: `);
        expect(warnings[0]).toMatch(
          /answered by onError "deny" \(denied with retryAfterMs 1000, `decision.failure` set\)\. This warning is emitted once per store\.$/,
        );

        // Back on the same port (empty: no persistence): checks are decided by Redis again, and
        // the deny cache is live again, by themselves.
        await server.start();
        let back: Decision | undefined;
        for (let i = 0; i < 400; i++) {
          back = await limiter.tryAcquire("after");
          if (back.failure === undefined) break;
          await new Promise((r) => setTimeout(r, 25));
        }
        expect(back).toMatchObject({ allowed: true, remaining: 2 });
        expect(back?.failure).toBeUndefined();
        for (let i = 0; i < 2; i++) await limiter.tryAcquire("after");
        await cacheDenial(store, () => limiter.tryAcquire("after"), config.noDenyCache);
        expect(warnings.length).toBe(1);
      },
      60_000,
    );
  }
});

describe.skipIf(!canStart)("Redis client matrix: Cluster", () => {
  let cluster: TestCluster;
  let admin: Cluster;
  beforeAll(async () => {
    cluster = (await startCluster()) as TestCluster;
    admin = new Cluster(clusterSeeds(cluster.ports));
    admin.on("error", () => {});
    await new Promise((r) => admin.once("ready", r));
  }, 60_000);
  afterAll(async () => {
    admin?.disconnect();
    await cluster?.dispose();
  });

  /** TRYAGAIN replies a master has sent so far. */
  const tryAgains = async (port: number) =>
    Number(/errorstat_TRYAGAIN:count=(\d+)/.exec((await rawCommand(port, "INFO errorstats")) ?? "")?.[1] ?? 0);

  for (const config of CONFIGS) {
    it.skipIf(config.missing !== undefined)(
      `${config.name}: ${config.noDenyCache ? "the deny cache stays off" : "the deny cache goes live"}; a batch over a half-migrated slot (TRYAGAIN) is decided, each check counted once`,
      async () => {
        const prefix = uniquePrefix("matrix-cluster");
        const { store } = await config.cluster(cluster.ports, { prefix, timeoutMs: 2000 });
        cleanups.push(() => store.close());
        const clock = new ManualClock(1_800_000_000_000);
        const ids: string[] = [];
        const limiter = createLimiter(SPEC, { store: recordingStore(store, ids), clock, name: "api" });

        for (let i = 0; i < 3; i++) expect(await limiter.tryAcquire("abuser")).toMatchObject({ allowed: true });
        await cacheDenial(store, () => limiter.tryAcquire("abuser"), config.noDenyCache);

        // Two keys whose checks share one slot: one migrated to another master, one not yet.
        const id = ids[0] as string;
        const target = slotFor(id, "m0");
        const keys = ["m0"];
        for (let i = 1; keys.length < 2; i++) if (slotFor(id, `m${i}`) === target) keys.push(`m${i}`);
        for (const key of keys) expect(await limiter.tryAcquire(key)).toMatchObject({ allowed: true, remaining: 2 });
        const masters = admin.nodes("master");
        // The owner now (an earlier configuration may have moved this slot already).
        const ranges = (await (masters[0] as Redis).cluster("SLOTS")) as unknown as Array<
          [number, number, [string, number]]
        >;
        const range = ranges.find(([start, end]) => start <= target && target <= end);
        const source = masters.find((m) => m.options.port === range?.[2][1]) as Redis;
        const dest = masters.find((m) => m !== source) as Redis;
        const sourceId = (await source.cluster("MYID")) as string;
        const destId = (await dest.cluster("MYID")) as string;
        const ours = ((await source.cluster("GETKEYSINSLOT", target, 1000)) as string[]).filter((k) =>
          k.startsWith(prefix),
        );
        expect(ours.length).toBe(2);
        const [moved, stays] = ours;
        expect(stays).toBeDefined();
        const tryAgainBefore = await tryAgains(source.options.port as number);
        await dest.cluster("SETSLOT", target, "IMPORTING", sourceId);
        await source.cluster("SETSLOT", target, "MIGRATING", destId);
        await source.migrate(
          dest.options.host as string,
          dest.options.port as number,
          "",
          0,
          5000,
          "KEYS",
          moved as string,
        );
        // Both checks in one tick: one batch, one script call over both keys, refused with TRYAGAIN.
        const batch = Promise.all(keys.map((key) => limiter.tryAcquire(key)));
        for (let i = 0; i < 400 && (await tryAgains(source.options.port as number)) === tryAgainBefore; i++) {
          await new Promise((r) => setTimeout(r, 5));
        }
        expect(await tryAgains(source.options.port as number)).toBeGreaterThan(tryAgainBefore);
        // Finish the migration (a client retrying TRYAGAIN itself succeeds once the slot has moved).
        for (;;) {
          const left = (await source.cluster("GETKEYSINSLOT", target, 100)) as string[];
          if (left.length === 0) break;
          await source.migrate(dest.options.host as string, dest.options.port as number, "", 0, 5000, "KEYS", ...left);
        }
        for (const m of masters) await m.cluster("SETSLOT", target, "NODE", destId);
        const decided = await batch;
        expect(decided.map((d) => [d.allowed, d.remaining, d.failure])).toEqual([
          [true, 1, undefined],
          [true, 1, undefined],
        ]);
        // Counted once each: the next check of each key leaves 0.
        for (const key of keys) expect(await limiter.tryAcquire(key)).toMatchObject({ allowed: true, remaining: 0 });
      },
      60_000,
    );
  }
});
