/**
 * Loopback ports for tests: a port free right now (for programs that cannot be told to pick
 * one, or a dead address nothing listens on), and a black hole that accepts connections, reads
 * what is sent and never answers (a hung server: calls end only by their timeouts).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Resolves with a loopback TCP port that is free right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}

/** A listening port that never answers, and how to close it (its held connections too). */
export interface BlackHole {
  port: number;
  close(): Promise<void>;
}

/** Listens on a loopback port, accepts every connection, reads it, never answers. */
export async function blackHole(): Promise<BlackHole> {
  const held: Socket[] = [];
  const server = createServer((socket) => {
    held.push(socket);
    socket.on("error", () => {});
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    port: typeof address === "object" && address !== null ? address.port : 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of held) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Whether a loopback TCP listener can bind `port` right now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

// Each process walks its own sequence (seeded by its pid), so two test runs at once rarely try
// the same ports; 4,099 is coprime with the range's size, so the walk visits every port.
let walked = 0;

/**
 * A loopback port for a server a test stops and restarts on the same port (a Redis "failover"),
 * free right now, with `port + 10000` free too (a Cluster node's bus port). It lies below the
 * kernel's ephemeral range (32768+), which `freePort()` and outgoing connections draw from: so
 * while the server is down, another test run's `freePort()` or a client socket cannot take it.
 */
export async function serverPort(): Promise<number> {
  for (let i = 0; i < 12_000; i++) {
    const port = 10_000 + ((process.pid * 7_919 + walked++ * 4_099) % 12_000);
    if ((await canListen(port)) && (await canListen(port + 10_000)) && claim(port)) return port;
  }
  throw new Error("no free loopback port in 10000-21999 (with its +10000 bus port)");
}

/** Where test processes claim the ports `serverPort` gave them: a file per port, holding the pid. */
const CLAIMS = join(tmpdir(), "sluice-test-ports");
/** This process's claims, released when it exits. */
const claimed: string[] = [];

/**
 * Claims `port` for this process until it exits. A port is free while its server is stopped for
 * an outage, and another test process (a second suite on the machine) walking onto it started
 * its own redis-server there, so the restart found the port taken (a CI failure on record). A
 * claim held by a process that is gone is taken over.
 */
function claim(port: number): boolean {
  mkdirSync(CLAIMS, { recursive: true });
  const file = join(CLAIMS, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
      if (claimed.length === 0) process.once("exit", release);
      claimed.push(file);
      return true;
    } catch {
      const holder = Number.parseInt(readText(file), 10);
      if (holder === process.pid || alive(holder)) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

/** Removes this process's claims. */
function release(): void {
  for (const file of claimed) rmSync(file, { force: true });
}

/** A file's text, or "" when it cannot be read (removed meanwhile). */
function readText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** Whether process `pid` exists (EPERM: it does, owned by someone else). */
function alive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
