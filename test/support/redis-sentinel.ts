/**
 * Starts a Redis Sentinel deployment on free loopback ports, each process in its own temp
 * folder: 1 master, 1 replica and 3 `redis-server --sentinel` processes monitoring the master
 * as "mymaster" (quorum 2, down after 1 s, so a `kill -9` of the master fails over in a few
 * seconds). `dispose()` kills every process and removes the folders.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./net.ts";
import { hasRedisServer, OwnedRedis, rawCommand, waitForPing } from "./redis-server.ts";

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
  const master = new OwnedRedis(await freePort());
  const replica = new OwnedRedis(await freePort(), []);
  replica.extraArgs.push("--replicaof", "127.0.0.1", String(master.port));
  const sentinels: SentinelProcess[] = [];
  const dispose = async () => {
    await Promise.all([...sentinels.map((s) => s.dispose()), master.dispose(), replica.dispose()]);
  };
  try {
    await master.start();
    await replica.start();
    for (let i = 0; i < 3; i++) sentinels.push(new SentinelProcess(await freePort(), master.port));
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
