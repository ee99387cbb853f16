/**
 * Loopback ports for tests: a port free right now (for programs that cannot be told to pick
 * one, or a dead address nothing listens on), and a black hole that accepts connections, reads
 * what is sent and never answers (a hung server: calls end only by their timeouts).
 */
import { createServer, type Socket } from "node:net";

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
    if ((await canListen(port)) && (await canListen(port + 10_000))) return port;
  }
  throw new Error("no free loopback port in 10000-21999 (with its +10000 bus port)");
}
