/**
 * Redis Cluster and Sentinel for tests, beside the standalone fixture (redis-server.ts): real
 * processes on free loopback ports, in temp folders, without persistence.
 * - `startCluster`: 3 masters (slots assigned by `redis-cli --cluster create`), optionally with
 *   replicas, ready once every node reports `cluster_state:ok` (and every replica's link is up).
 * - `startSentinel`: 1 master, 1 replica and 3 `redis-server --sentinel` processes monitoring the
 *   master as "mymaster" (quorum 2, down after 1 s, so a `kill -9` of the master fails over in a
 *   few seconds).
 * - `clusterRedis(what)`: a test file's cluster, started once at its top level and disposed after
 *   its last test; `useClusterClients` connects an ioredis `Cluster` and a node-redis
 *   `createCluster` to it for a describe block.
 * - `recordingStore` and `slotFor`: which Cluster slot a key's check goes to.
 * `dispose()` kills every process and removes the folders.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Cluster } from "ioredis";
import { createCluster } from "redis";
import type { RuleBinding, Store } from "sluice";
import { afterAll, beforeAll } from "vitest";
import { hashTag, slotOf, tagSeed } from "../../src/stores/redis/keys.ts";
import { serverPort } from "./net.ts";
import { hasRedisServer, noRedis, OwnedRedis, rawCommand, waitForPing } from "./redis-server.ts";
import { isCI } from "./skip.ts";

/** A running test cluster. */
export interface TestCluster {
  /** The masters' ports (at start). */
  ports: number[];
  /** Every node, masters first (so a test may kill one). */
  nodes: OwnedRedis[];
  /** Stops every node. */
  dispose(): Promise<void>;
}

/** Options of {@link startCluster}. */
export interface ClusterOptions {
  /** Replicas per master (default 0). */
  replicas?: number;
  /** `cluster-node-timeout` in ms (default Redis's 15000); short values make failovers quick. */
  nodeTimeoutMs?: number;
  /** Extra `redis-server` arguments for every node. */
  extraArgs?: string[];
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (out += c));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} exited ${code}: ${out}`))));
  });
}

/** Starts the cluster, or resolves undefined when redis-server is not available. */
export async function startCluster(options: ClusterOptions = {}): Promise<TestCluster | undefined> {
  if (!(await hasRedisServer())) return undefined;
  const replicas = options.replicas ?? 0;
  const nodes: OwnedRedis[] = [];
  const dispose = async () => {
    await Promise.all(nodes.map((n) => n.dispose()));
  };
  try {
    for (let i = 0; i < 3 * (1 + replicas); i++) {
      const port = await serverPort();
      const node = new OwnedRedis(port, []);
      node.extraArgs.push("--cluster-enabled", "yes", "--cluster-config-file", `${node.dir}/nodes-${port}.conf`);
      if (options.nodeTimeoutMs !== undefined)
        node.extraArgs.push("--cluster-node-timeout", String(options.nodeTimeoutMs));
      node.extraArgs.push(...(options.extraArgs ?? []));
      nodes.push(node);
    }
    await Promise.all(nodes.map((n) => n.start()));
    // redis-cli makes the first 3 nodes listed the masters.
    await run("redis-cli", [
      "--cluster",
      "create",
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      "--cluster-replicas",
      String(replicas),
      "--cluster-yes",
    ]);
    for (let i = 0; i < 300; i++) {
      const infos = await Promise.all(nodes.map((n) => rawCommand(n.port, "CLUSTER INFO")));
      const links =
        replicas === 0
          ? []
          : await Promise.all(nodes.slice(3).map((n) => rawCommand(n.port, "INFO replication", "127.0.0.1", 500)));
      if (
        infos.every((info) => info?.includes("cluster_state:ok")) &&
        links.every((info) => info?.includes("master_link_status:up"))
      ) {
        return { ports: nodes.slice(0, 3).map((n) => n.port), nodes, dispose };
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("test cluster did not reach cluster_state:ok");
  } catch (error) {
    await dispose();
    throw error;
  }
}

/** The monitored master's name. */
export const MASTER_NAME = "mymaster";

/** A running Sentinel deployment. */
export interface TestSentinel {
  /** The first master (killed by the failover test). */
  master: OwnedRedis;
  /** The replica (promoted by the sentinels when the master dies). */
  replica: OwnedRedis;
  /** The sentinels' ports (what clients are given). */
  sentinelPorts: number[];
  /** The port the sentinels currently name as master (undefined while they cannot say). */
  masterPort(): Promise<number | undefined>;
  /** Stops every process. */
  dispose(): Promise<void>;
}

/** One `redis-server --sentinel` process with its own writable config (sentinels rewrite it). */
class SentinelProcess {
  readonly dir = mkdtempSync(join(tmpdir(), "sluice-sentinel-"));
  #child: ChildProcess | undefined;

  constructor(
    readonly port: number,
    readonly masterPort: number,
  ) {}

  async start(): Promise<void> {
    const config = join(this.dir, "sentinel.conf");
    writeFileSync(
      config,
      [
        `port ${this.port}`,
        "bind 127.0.0.1",
        `dir ${this.dir}`,
        `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${this.masterPort} 2`,
        `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
        `sentinel failover-timeout ${MASTER_NAME} 5000`,
        `sentinel parallel-syncs ${MASTER_NAME} 1`,
        "",
      ].join("\n"),
    );
    const child = spawn("redis-server", [config, "--sentinel"], { stdio: "ignore" });
    this.#child = child;
    await Promise.race([waitForPing(this.port), new Promise((_, reject) => child.once("error", reject))]);
  }

  async dispose(): Promise<void> {
    const child = this.#child;
    if (child !== undefined && child.exitCode === null) {
      await new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGKILL");
      });
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Starts the deployment, or resolves undefined when redis-server is not available. */
export async function startSentinel(): Promise<TestSentinel | undefined> {
  if (!(await hasRedisServer())) return undefined;
  const master = new OwnedRedis(await serverPort());
  const replica = new OwnedRedis(await serverPort(), []);
  replica.extraArgs.push("--replicaof", "127.0.0.1", String(master.port));
  const sentinels: SentinelProcess[] = [];
  const dispose = async () => {
    await Promise.all([...sentinels.map((s) => s.dispose()), master.dispose(), replica.dispose()]);
  };
  try {
    await master.start();
    await replica.start();
    for (let i = 0; i < 3; i++) sentinels.push(new SentinelProcess(await serverPort(), master.port));
    await Promise.all(sentinels.map((s) => s.start()));
    const masterPort = async () => {
      for (const s of sentinels) {
        const reply = await rawCommand(s.port, `SENTINEL get-master-addr-by-name ${MASTER_NAME}`);
        const port = reply === undefined ? undefined : /\r\n(\d+)\r\n$/.exec(reply)?.[1];
        if (port !== undefined) return Number(port);
      }
      return undefined;
    };
    // Ready when the replica is in sync and every sentinel knows the replica and the others.
    for (let i = 0; ; i++) {
      const info = await rawCommand(replica.port, "INFO replication", "127.0.0.1", 500);
      const views = await Promise.all(
        sentinels.map((s) => rawCommand(s.port, `SENTINEL master ${MASTER_NAME}`, "127.0.0.1", 500)),
      );
      const known = views.every((v) => v !== undefined && /num-slaves\r\n:?1\r\n/.test(v.replace(/\$\d+\r\n/g, "")));
      const peers = views.every(
        (v) => v !== undefined && /num-other-sentinels\r\n:?2\r\n/.test(v.replace(/\$\d+\r\n/g, "")),
      );
      if (info?.includes("master_link_status:up") && known && peers) break;
      if (i > 300) throw new Error("the test Sentinel deployment did not become ready");
      await new Promise((r) => setTimeout(r, 100));
    }
    return { master, replica, sentinelPorts: sentinels.map((s) => s.port), masterPort, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/** Cluster seeds for clients: every master's port on the loopback. */
export function clusterSeeds(ports: readonly number[]): Array<{ host: string; port: number }> {
  return ports.map((port) => ({ host: "127.0.0.1", port }));
}

/**
 * The cluster of a test file, started once at the file's top level (`await clusterRedis(what)`):
 * undefined (said loudly, a failure under CI) when it cannot start; disposed after the file's
 * last test.
 */
export async function clusterRedis(what: string, options: ClusterOptions = {}): Promise<TestCluster | undefined> {
  const cluster = await startCluster(options).catch((error: unknown) => {
    if (isCI()) throw error;
    console.warn(`cluster could not start: ${String(error)}`);
    return undefined;
  });
  if (cluster === undefined) noRedis(what);
  afterAll(async () => {
    await cluster?.dispose();
  });
  return cluster;
}

const nodeCluster = (ports: readonly number[]) =>
  createCluster({ rootNodes: ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })) });

/** Both Cluster clients of a describe block. */
export interface ClusterClients {
  io: Cluster;
  node: ReturnType<typeof nodeCluster>;
}

/**
 * An ioredis `Cluster` and a node-redis `createCluster` connected to `cluster` for the enclosing
 * describe block: connected before its first test, closed after its last. Read them inside tests.
 */
export function useClusterClients(cluster: TestCluster | undefined): Readonly<ClusterClients> {
  let clients: ClusterClients | undefined;
  beforeAll(async () => {
    const ports = cluster?.ports ?? [];
    const io = new Cluster(clusterSeeds(ports));
    await io.ping();
    const node = nodeCluster(ports);
    await node.connect();
    clients = { io, node };
  });
  afterAll(async () => {
    clients?.io.disconnect();
    await clients?.node.close();
  });
  const connected = (): ClusterClients => {
    if (clients === undefined)
      throw new Error("useClusterClients: clients are connected in beforeAll; read them in tests");
    return clients;
  };
  return {
    get io() {
      return connected().io;
    },
    get node() {
      return connected().node;
    },
  };
}

/** A store wrapper that records the rule ids bound (to compute which slot a key's check uses). */
export function recordingStore(store: Store, ids: string[]): Store & { readonly synchronous: false } {
  return {
    synchronous: false,
    bind: (rule: RuleBinding) => {
      ids.push(rule.id);
      return store.bind(rule);
    },
  };
}

/** The Cluster slot sluice sends `key`'s check of rule `id` to. */
export function slotFor(id: string, key: string): number {
  return slotOf(hashTag(tagSeed(id), key));
}
