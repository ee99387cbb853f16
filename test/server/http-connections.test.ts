/**
 * The HTTP door's connections are bounded in time and count (issue 35): a socket that never
 * sends a byte is closed (Node's headersTimeout counts only from a request's first byte, so it
 * lived forever), and past `--max-connections` a new connection is closed on arrival while the
 * open ones keep being answered. Raw sockets against the bin; asserted on order, not duration.
 */
import { writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, serve, tempDir } from "../cli/helpers.ts";

const tmp = tempDir();
const config = join(tmp.dir, "rules.yaml");
beforeAll(() => {
  ensureBuilt();
  writeFileSync(config, "rules:\n  api: { algorithm: fixed-window, limit: 5, windowMs: 60000 }\n");
});
afterAll(() => tmp.cleanup());

/** A TCP connection to `url` that sends nothing; resolves once connected. */
async function silent(url: string): Promise<{ socket: Socket; closed: Promise<void>; isClosed: () => boolean }> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  socket.on("error", () => undefined);
  let done = false;
  const closed = new Promise<void>((resolve) =>
    socket.once("close", () => {
      done = true;
      resolve();
    }),
  );
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  return { socket, closed, isClosed: () => done };
}

/** Sends GET /healthz on `socket` and resolves with the status line. */
function healthOn(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const onData = (d: Buffer) => {
      text += d.toString("latin1");
      if (text.includes("\r\n")) {
        socket.off("data", onData);
        resolve(text.slice(0, text.indexOf("\r\n")));
      }
    };
    socket.on("data", onData);
    socket.write("GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
  });
}

describe("HTTP connections", () => {
  it("closes a socket that never sends a byte", async () => {
    const s = await serve(["--config", config]);
    try {
      const quiet = await silent(s.url);
      await quiet.closed; // the vitest timeout fails this if the server keeps it
      expect(quiet.isClosed()).toBe(true);
    } finally {
      await s.stop();
    }
  }, 60_000);

  it("past --max-connections a new connection is closed on arrival; the open ones are answered", async () => {
    const s = await serve(["--config", config, "--max-connections", "3"]);
    const held: Array<Awaited<ReturnType<typeof silent>>> = [];
    try {
      for (let i = 0; i < 3; i++) held.push(await silent(s.url));
      const fourth = await silent(s.url);
      await fourth.closed;
      // Closed while the three held before it were still open (they close only when silent too long).
      expect(held.map((h) => h.isClosed())).toEqual([false, false, false]);
      expect(await healthOn(held[0]?.socket as Socket)).toBe("HTTP/1.1 200 OK");
    } finally {
      for (const h of held) h.socket.destroy();
      await s.stop();
    }
  }, 60_000);
});
