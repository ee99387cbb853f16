/**
 * The cluster socket as a trust boundary: a hostile peer's frames (negative cost, garbage, huge)
 * close its connection and are reported, never decided; the socket file is owner-only unless
 * `socketMode` widens it; the takeover lock is a pid file beside the socket that a live squatter
 * holds and a dead one does not; a host that exits on SIGTERM removes its socket file.
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

  it("a live squatter holding the lock stops the takeover of a stale socket; a dead one does not", async () => {
    const path = join(dir, "stale.sock");
    // A host that died without cleaning up: its socket file stays, nobody listens.
    const dead = spawn(process.execPath, [
      "-e",
      `require("net").createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, "SIGKILL"))`,
    ]);
    await once(dead, "exit");
    expect(statSync(path).isSocket()).toBe(true);
    // The squatter: a live process whose pid is in the lock file.
    const squatter = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"]);
    children.push(squatter);
    writeFileSync(`${path}.lock`, String(squatter.pid), { mode: 0o600 });
    const store = new ClusterStore({ socket: path, timeoutMs: 3000 });
    const limiter = createLimiter(bucket, { store, name: "s" });
    const blocked = await limiter.tryAcquire("k");
    expect(blocked.failure).toBeDefined(); // answered by the policy: nobody hosts
    expect(store.hosting).toBe(false);
    squatter.kill("SIGKILL");
    await once(squatter, "exit");
    // Its pid is gone: the lock is stale, removed, and the takeover goes through.
    const d = await limiter.tryAcquire("k");
    expect(d.failure).toBeUndefined();
    expect(store.hosting).toBe(true);
    expect(existsSync(`${path}.lock`)).toBe(false);
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
