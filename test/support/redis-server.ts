/**
 * Finds or starts the Redis the Redis suites run against: `REDIS_URL` if set, else
 * 127.0.0.1:6379 if it answers, else a `redis-server` started here on a free loopback port.
 * Servers started here are the only ones tests may stop or restart (never the shared 6379).
 * When none can be had the suites skip with a loud notice, except under CI, where they fail.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, beforeAll } from "vitest";
import { serverPort } from "./net.ts";
import { cannotRun } from "./skip.ts";

/**
 * An ioredis client for a loopback port nobody listens on (port 1 unless given): with no
 * offline queue and no retries, every command fails at once. The caller disconnects it.
 */
export function deadIoredis(port = 1): Redis {
  const client = new Redis({
    port,
    host: "127.0.0.1",
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on("error", () => {});
  return client;
}

/** Sends one inline command and resolves with the raw reply text (or undefined on failure). */
export function rawCommand(
  port: number,
  command: string,
  host = "127.0.0.1",
  waitMs = 500,
): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    let text = "";
    const done = (value: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => done(undefined), waitMs);
    socket.on("connect", () => socket.write(`${command}\r\n`));
    socket.on("data", (chunk) => {
      text += chunk.toString();
      const bulk = /^\$(\d+)\r\n/.exec(text);
      if (bulk ? text.length >= bulk[0].length + Number(bulk[1]) + 2 : text.endsWith("\r\n")) done(text);
    });
    socket.on("error", () => done(undefined));
  });
}

/** Waits until the server on `port` answers PING. */
export async function waitForPing(port: number, host = "127.0.0.1", tries = 100): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if ((await rawCommand(port, "PING", host))?.startsWith("+PONG")) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis on ${host}:${port} did not answer PING`);
}

/** A redis-server process this test run started (so it may stop and restart it). */
export class OwnedRedis {
  readonly port: number;
  readonly dir: string;
  readonly extraArgs: string[];
  #child: ChildProcess | undefined;

  constructor(port: number, extraArgs: string[] = []) {
    this.port = port;
    this.extraArgs = extraArgs;
    this.dir = mkdtempSync(join(tmpdir(), "sluice-redis-"));
  }

  /** `redis://127.0.0.1:<port>`. */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server and waits for it to answer. */
  async start(): Promise<this> {
    const child = spawn(
      "redis-server",
      [
        "--port",
        String(this.port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        this.dir,
        ...this.extraArgs,
      ],
      { stdio: "ignore" },
    );
    this.#child = child;
    const exited = new Promise<never>((_, reject) => {
      child.once("error", reject);
      child.once("exit", (code) =>
        reject(new Error(`redis-server on port ${this.port} exited (code ${code}) before answering: port taken?`)),
      );
    });
    exited.catch(() => {});
    await Promise.race([waitForPing(this.port), exited]);
    // A PING answered by another run's server on this port (ours failed to bind) would make two
    // test runs share one server, and one's stop() the other's outage: check the answer is ours.
    const info = (await rawCommand(this.port, "INFO server")) ?? "";
    const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
    if (pid !== child.pid) {
      await this.stop();
      throw new Error(`port ${this.port} is answered by another redis-server (pid ${pid}), not the one started here`);
    }
    return this;
  }

  /** Kills the server and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    });
  }

  /** Stops the server and removes its folder. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Whether `redis-server` can be run here. */
export function hasRedisServer(): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn("redis-server", ["--version"], { stdio: "ignore" });
    child.on("error", () => resolve(false));
    child.on("exit", (code) => resolve(code === 0));
  });
}

/**
 * Whether a suite that starts its own servers can run (`await canStartRedis(what)` at a test
 * file's top level): when `redis-server` cannot be run, says so loudly (a failure under CI).
 */
export async function canStartRedis(what: string): Promise<boolean> {
  if (await hasRedisServer()) return true;
  cannotRun(`Redis suite "${what}"`, "no redis-server to start");
  return false;
}

/** Starts a private redis-server on a free port, or undefined when none can be started. */
export async function startOwnedRedis(extraArgs: string[] = []): Promise<OwnedRedis | undefined> {
  if (!(await hasRedisServer())) return undefined;
  return new OwnedRedis(await serverPort(), extraArgs).start();
}

/** Says loudly that a Redis suite cannot run; under CI that is a failure, not a skip. */
export function noRedis(what: string): void {
  cannotRun(`Redis suite "${what}"`, "no REDIS_URL, nothing on 127.0.0.1:6379 and no redis-server to start");
}

/** The shared Redis to run against: its URL and, when started here, the process to dispose. */
export interface SharedRedis {
  url: string;
  owned: OwnedRedis | undefined;
}

/** REDIS_URL, else 127.0.0.1:6379 if it answers, else a server started here; undefined if none. */
export async function findRedis(): Promise<SharedRedis | undefined> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, owned: undefined };
  if ((await rawCommand(6379, "PING"))?.startsWith("+PONG")) return { url: "redis://127.0.0.1:6379", owned: undefined };
  const owned = await startOwnedRedis();
  return owned === undefined ? undefined : { url: owned.url, owned };
}

/**
 * A store deadline for tests that compare decisions: far above any healthy round trip, so a
 * machine running two suites at once on 2 cores never turns a slow answer into an onError one.
 * Tests about deadlines set their own.
 */
export const WORK_BOUND_MS = 10_000;

/** A prefix unique to this run, so suites sharing one Redis never touch each other's keys. */
export function uniquePrefix(label: string): string {
  return `sluice-test:${label}:${process.pid}:${Math.random().toString(36).slice(2, 10)}:`;
}

const nodeClient = (url: string) => createClient({ url });

/** Both clients the suites run against, connected to one standalone Redis. */
export interface StandaloneClients {
  io: Redis;
  node: ReturnType<typeof nodeClient>;
  /** Disconnects both clients. */
  close(): Promise<void>;
}

/** Connects an ioredis and a node-redis client to `url`. */
export async function connectClients(url: string): Promise<StandaloneClients> {
  const io = new Redis(url, { lazyConnect: true });
  await io.connect();
  const node = nodeClient(url);
  await node.connect();
  return {
    io,
    node,
    close: async () => {
      io.disconnect();
      await node.close();
    },
  };
}

/**
 * The shared Redis of a test file, found once at the file's top level (`await standaloneRedis(what)`):
 * says loudly when there is none (a failure under CI), and disposes a server started here
 * after the file's last test.
 */
export async function standaloneRedis(what: string): Promise<SharedRedis | undefined> {
  const redis = await findRedis();
  if (redis === undefined) noRedis(what);
  afterAll(async () => {
    await redis?.owned?.dispose();
  });
  return redis;
}

/**
 * Both clients connected to `redis` for the enclosing describe block: connected before its
 * first test, closed after its last. Read `io` and `node` inside tests.
 */
export function useStandaloneClients(redis: SharedRedis | undefined): Readonly<StandaloneClients> & { url: string } {
  let clients: StandaloneClients | undefined;
  beforeAll(async () => {
    clients = await connectClients(redis?.url ?? "");
  });
  afterAll(async () => {
    await clients?.close();
  });
  const connected = (): StandaloneClients => {
    if (clients === undefined)
      throw new Error("useStandaloneClients: clients are connected in beforeAll; read them in tests");
    return clients;
  };
  return {
    url: redis?.url ?? "",
    get io() {
      return connected().io;
    },
    get node() {
      return connected().node;
    },
    close: () => connected().close(),
  };
}
