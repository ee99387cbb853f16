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
