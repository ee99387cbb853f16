/**
 * A small stand-in for Upstash's REST endpoint, forwarding to a real Redis through ioredis, so
 * the real `@upstash/redis` client talks to real Redis in tests (no cloud database). It speaks
 * what that client sends: `POST /` with a JSON command array answered `{ result }` (200) or
 * `{ error }` (400), `POST /pipeline` with an array of them answered with an array of those,
 * `Authorization: Bearer <token>` (401 otherwise), and `Upstash-Encoding: base64` (string
 * results base64-encoded, except "OK", as Upstash does). It counts the commands it served.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";

/** A running bridge. */
export interface UpstashBridge {
  /** `http://127.0.0.1:<port>`: the `url` to give `@upstash/redis`. */
  readonly url: string;
  /** The token it requires. */
  readonly token: string;
  /** Commands served, by name (upper case). */
  readonly served: Map<string, number>;
  /** Stops the server and disconnects from Redis. */
  close(): Promise<void>;
}

type Reply = { result: unknown } | { error: string };

function encode(value: unknown): unknown {
  if (typeof value === "string") return value === "OK" ? value : Buffer.from(value, "utf8").toString("base64");
  if (Array.isArray(value)) return value.map(encode);
  return value;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** Starts a bridge on a free port of 127.0.0.1 to the Redis at `redisUrl`. */
export async function startUpstashBridge(redisUrl: string, token = "bridge-token"): Promise<UpstashBridge> {
  const redis = new Redis(redisUrl, { lazyConnect: true });
  await redis.connect();
  const served = new Map<string, number>();

  const run = async (command: unknown, base64: boolean): Promise<Reply> => {
    if (!Array.isArray(command) || command.length === 0) return { error: "ERR a command is a non-empty JSON array" };
    const [name, ...args] = command.map((part) => (typeof part === "string" ? part : JSON.stringify(part)));
    const upper = (name as string).toUpperCase();
    served.set(upper, (served.get(upper) ?? 0) + 1);
    try {
      const result = await redis.call(name as string, ...args);
      return { result: base64 ? encode(result) : result };
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== "POST") return send(res, 405, { error: "only POST" });
      if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, { error: "Unauthorized" });
      const base64 = String(req.headers["upstash-encoding"] ?? "").toLowerCase() === "base64";
      let body: unknown;
      try {
        body = JSON.parse(await readBody(req));
      } catch {
        return send(res, 400, { error: "ERR the body is not JSON" });
      }
      const path = (req.url ?? "/").split("?")[0];
      if (path === "/pipeline") {
        if (!Array.isArray(body)) return send(res, 400, { error: "ERR a pipeline is an array of commands" });
        const replies: Reply[] = [];
        for (const command of body) replies.push(await run(command, base64));
        return send(res, 200, replies);
      }
      if (path !== "/" && path !== "") return send(res, 404, { error: `ERR no such endpoint ${path}` });
      const reply = await run(body, base64);
      return send(res, "error" in reply ? 400 : 200, reply);
    })().catch((error: unknown) => send(res, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    served,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      redis.disconnect();
    },
  };
}
