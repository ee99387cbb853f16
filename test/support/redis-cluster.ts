/**
 * Starts a 3-master Redis Cluster on free loopback ports (no replicas, no persistence), slots
 * assigned by `redis-cli --cluster create`, and waits until every node reports
 * `cluster_state:ok`. `dispose()` kills the nodes and removes their folders.
 */
import { spawn } from "node:child_process";
import { freePort, hasRedisServer, OwnedRedis, rawCommand } from "./redis-server.ts";

/** A running test cluster. */
export interface TestCluster {
  /** The masters' ports. */
  ports: number[];
  /** Stops every node. */
  dispose(): Promise<void>;
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
export async function startCluster(): Promise<TestCluster | undefined> {
  if (!(await hasRedisServer())) return undefined;
  const nodes: OwnedRedis[] = [];
  const dispose = async () => {
    await Promise.all(nodes.map((n) => n.dispose()));
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const node = new OwnedRedis(port, []);
      node.extraArgs.push("--cluster-enabled", "yes", "--cluster-config-file", `${node.dir}/nodes-${port}.conf`);
      nodes.push(node);
    }
    await Promise.all(nodes.map((n) => n.start()));
    await run("redis-cli", [
      "--cluster",
      "create",
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ]);
    for (let i = 0; i < 200; i++) {
      const infos = await Promise.all(nodes.map((n) => rawCommand(n.port, "CLUSTER INFO")));
      if (infos.every((info) => info?.includes("cluster_state:ok")))
        return { ports: nodes.map((n) => n.port), dispose };
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("test cluster did not reach cluster_state:ok");
  } catch (error) {
    await dispose();
    throw error;
  }
}
