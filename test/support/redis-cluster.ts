/**
 * Starts a 3-master Redis Cluster on free loopback ports (no persistence), slots assigned by
 * `redis-cli --cluster create`, optionally with one replica per master, and waits until every
 * node reports `cluster_state:ok` (and every replica's link to its master is up).
 * `dispose()` kills the nodes and removes their folders.
 */
import { spawn } from "node:child_process";
import { freePort } from "./net.ts";
import { hasRedisServer, OwnedRedis, rawCommand } from "./redis-server.ts";

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
      const port = await freePort();
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
