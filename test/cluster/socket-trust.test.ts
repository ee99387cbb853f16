/**
 * The cluster socket as a trust boundary: a hostile peer's frames (negative cost, garbage, huge)
 * close its connection and are reported, never decided; the socket file is owner-only unless
 * `socketMode` widens it; the takeover lock is a socket beside the socket on which a live holder
 * answers, and a file there that does not answer (whatever pid it names) is stale; a host that
 * exits on SIGTERM removes its socket file.
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createLimiter } from "../../src/index.ts";
import { ClusterStore } from "../../src/stores/cluster/index.ts";
import { CHANNEL } from "../../src/stores/cluster/protocol.ts";
import { MAX_FRAME } from "../../src/stores/cluster/socket-link.ts";
import { LOCK_HELLO } from "../../src/stores/cluster/takeover-lock.ts";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "sluice-trust-"));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const bucket = { algorithm: "fixed-window", limit: 5, windowMs: 3_600_000 } as const;

/** A raw peer on `path`: sends `text`, resolves with what it read once the host closed the connection. */
function peer(path: string, text: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(path);
    let got = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (got += d));
    socket.on("error", (error: NodeJS.ErrnoException) =>
      error.code === "EPIPE" || error.code === "ECONNRESET" ? undefined : reject(error),
    );
    socket.on("close", () => resolve(got));
    socket.on("connect", () => socket.write(text));
  });
}

function warnings(): { seen: string[]; stop: () => void } {
  const seen: string[] = [];
  const on = (w: Error & { code?: string }) => {
    if (w.code === "SLUICE_CLUSTER_BAD_FRAME") seen.push(w.message);
  };
  process.on("warning", on);
  return { seen, stop: () => process.off("warning", on) };
}

describe("a hostile peer on the socket", () => {
  it("negative cost, garbage and huge frames close its connection, are reported, and decide nothing", async () => {
    const path = join(dir, "host.sock");
    const store = new ClusterStore({ socket: path, timeoutMs: 5000 });
    const limiter = createLimiter(bucket, { store, name: "victim-rule" });
    expect((await limiter.tryAcquire("warm")).allowed).toBe(true);
    expect(store.hosting).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const w = warnings();
    try {
      const bind = { binding: 1, id: "name:victim-rule", specs: [bucket], ban: null, clock: false };
      const frame = (ops: unknown[], seq = 1) =>
        `${JSON.stringify({ channel: CHANNEL, type: "batch", seq, binds: [bind], releases: [], ops })}\n`;
      // The attack of the issue: a negative cost to hand the victim capacity.
      expect(await peer(path, frame([[1, "victim", -1000, null, "check"]]))).toBe("");
      // Other shapes of the same: a fractional cost, an unknown op, a huge key, a non-object, garbage.
      const hostile = [
        frame([[1, "victim", 0.5, null, "check"]]),
        frame([[1, "victim", 1, null, "grant"]]),
        frame([[1, "v".repeat(70_000), 1, null, "check"]]),
        frame([[1, "victim", 1, null]]),
        '["not","a","batch"]\n',
        "{ this is not json\n",
      ];
      for (const text of hostile) expect(await peer(path, text)).toBe("");
      // A frame longer than MAX_FRAME with no end in sight.
      expect(await peer(path, Buffer.alloc(MAX_FRAME + 1024, 0x61))).toBe("");
      expect(w.seen).toHaveLength(hostile.length + 2);
      expect(w.seen[0]).toMatch(/ops\[0\]: the cost is not a positive safe integer \(got -1000\)/);
      expect(w.seen.at(-1)).toMatch(/without a frame end/);
      // A well-formed peer is still answered, and the victim has exactly its limit.
      let admitted = 0;
      for (let i = 0; i < 8; i++) if ((await limiter.tryAcquire("victim")).allowed) admitted++;
      expect(admitted).toBe(5);
    } finally {
      w.stop();
      void store;
    }
  });
});

describe("the socket file and the takeover lock", () => {
  it("socketMode widens the file's mode; a mode that locks the owner out is refused", async () => {
    const path = join(dir, "wide.sock");
    const store = new ClusterStore({ socket: path, socketMode: 0o660, timeoutMs: 5000 });
    await createLimiter(bucket, { store, name: "m" }).tryAcquire("k");
    expect(statSync(path).mode & 0o777).toBe(0o660);
    expect(() => new ClusterStore({ socket: join(dir, "x.sock"), socketMode: 0o066 })).toThrow(/socketMode/);
  });

  /** A socket file at `path` left by a host that died without cleaning up (nobody listens). */
  async function deadHost(path: string): Promise<void> {
    const dead = spawn(process.execPath, [
      "-e",
      `require("net").createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, "SIGKILL"))`,
    ]);
    await once(dead, "exit");
    expect(statSync(path).isSocket()).toBe(true);
  }

  /** A live process listening on `path`'s lock, answering `hello` to every connection (or nothing). */
  async function lockHolder(path: string, hello: string | undefined): Promise<ChildProcess> {
    const child = spawn(process.execPath, [
      "-e",
      `const hello = ${JSON.stringify(hello ?? null)};
       require("net").createServer((c) => { if (hello !== null) c.end(hello); })
         .listen(${JSON.stringify(`${path}.lock`)}, () => console.log("up"));`,
    ]);
    children.push(child);
    await once(child.stdout as NodeJS.ReadableStream, "data");
    return child;
  }

  it("a lock whose holder answers stops the takeover of a stale socket until the holder is gone", async () => {
    const path = join(dir, "held.sock");
    await deadHost(path);
    // A takeover in progress elsewhere answers so: nobody else takes over meanwhile.
    const live = await lockHolder(path, `${LOCK_HELLO} 12345\n`);
    const store = new ClusterStore({ socket: path, timeoutMs: 3000 });
    const limiter = createLimiter(bucket, { store, name: "s" });
    const blocked = await limiter.tryAcquire("k");
    expect(blocked.failure).toBeDefined(); // answered by the policy: nobody hosts
    expect(store.hosting).toBe(false);
    live.kill("SIGKILL");
    await once(live, "exit");
    const d = await limiter.tryAcquire("k");
    expect(d.failure).toBeUndefined();
    expect(store.hosting).toBe(true);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it("a lock that does not answer is stale, however live its holder: a wrong answer, none, a live pid in a file", async () => {
    const squatters: Array<[string, (path: string) => Promise<unknown>]> = [
      ["a wrong answer", (path) => lockHolder(path, "HTTP/1.1 400 Bad Request\r\n\r\n")],
      ["no answer", (path) => lockHolder(path, undefined)],
      ["a fresh file naming a live pid", async (path) => writeFileSync(`${path}.lock`, String(process.pid))],
    ];
    for (const [what, squat] of squatters) {
      const path = join(dir, `squat-${squatters.findIndex(([w]) => w === what)}.sock`);
      await deadHost(path);
      await squat(path);
      const store = new ClusterStore({ socket: path, timeoutMs: 6000 });
      const d = await createLimiter(bucket, { store, name: "s" }).tryAcquire("k");
      expect(d.failure, what).toBeUndefined();
      expect(store.hosting, what).toBe(true);
      expect(existsSync(`${path}.lock`), what).toBe(false);
    }
  });

  it("a host that exits on SIGTERM removes its socket file", async () => {
    ensureBuilt();
    const path = join(dir, "term.sock");
    const child = fork(join(ROOT, "test/cluster/fixtures/socket-client.mjs"), [JSON.stringify({ socket: path })], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    children.push(child);
    await once(child, "message");
    const warmed = new Promise((resolve) => child.once("message", resolve));
    child.send({ id: 1, cmd: "warm" });
    expect(await warmed).toMatchObject({ hosting: true });
    expect(statSync(path).isSocket()).toBe(true);
    child.kill("SIGTERM");
    const [, signal] = await once(child, "exit");
    expect(signal).toBe("SIGTERM"); // it still dies by the signal, as without sluice
    expect(existsSync(path)).toBe(false);
  });
});
