/**
 * The one server harness of the HTTP tests: whatever started a Node server on port 0 (Node's
 * `http`, Express, Koa, Fastify's `listen`, Nest's `app.listen`, @hono/node-server's `serve()`),
 * this waits until it listens and gives its URL and a close that cuts open connections first,
 * so a request the test left hanging never holds the suite.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A started Node server, as far as the harness needs it. */
export type NodeServer = Pick<Server, "listening" | "once" | "address" | "close"> & {
  closeAllConnections?: () => void;
};

/** A listening server: its base URL and how to stop it. */
export interface Listening {
  url: string;
  close(): Promise<void>;
}

/**
 * Waits until `server` (started on port 0 of `host`) listens. `shutdown` is the framework's own
 * close (`fastify.close()`, Nest's `app.close()`: their onClose hooks run), called once open
 * connections are cut; without it the server is closed directly.
 */
export async function listening(
  server: NodeServer,
  host = "127.0.0.1",
  shutdown?: () => Promise<unknown>,
): Promise<Listening> {
  if (!server.listening) {
    await new Promise<void>((resolve, reject) => {
      server.once("listening", resolve);
      server.once("error", reject);
    });
  }
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    close: async () => {
      server.closeAllConnections?.();
      if (shutdown !== undefined) await shutdown();
      else await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
