/**
 * The gRPC door's connections are bounded in time and count (issue 35): a connection with no
 * call open is closed after `--grpc-idle-timeout` even while its client PINGs, a socket that
 * never sends its HTTP/2 preface is closed too, and past `--grpc-max-connections` a new
 * connection is closed on arrival while the open ones keep working. Real sockets against the
 * bin; asserted on what happened, never on how long it took.
 */
import { writeFileSync } from "node:fs";
import { type ClientHttp2Session, connect } from "node:http2";
import { connect as tcp } from "node:net";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve, tempDir } from "../cli/helpers.ts";
import { within } from "../support/poll.ts";
import { rlsClient } from "./envoy-client.ts";
import { makePki } from "./tls-certs.ts";

const tmp = tempDir();
const config = join(tmp.dir, "app.yaml");

beforeAll(() => {
  ensureBuilt();
  writeFileSync(
    config,
    "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n",
  );
});
afterAll(() => tmp.cleanup());

function grpcAddress(s: Served): string {
  const m = /envoy grpc\s+(\S+)/.exec(s.stdout());
  if (m === null) throw new Error(`no gRPC address in:\n${s.stdout()}`);
  return m[1] as string;
}

/** An HTTP/2 session that makes no call; `closed` says when the server ended it. */
function idleSession(address: string): { session: ClientHttp2Session; closed: Promise<void>; isClosed: () => boolean } {
  const session = connect(`http://${address}`);
  session.on("error", () => undefined);
  let done = false;
  const closed = new Promise<void>((resolve) =>
    session.once("close", () => {
      done = true;
      resolve();
    }),
  );
  return { session, closed, isClosed: () => done };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("gRPC connections", () => {
  it("closes a connection idle past --grpc-idle-timeout, PINGs or not, and a socket that never speaks HTTP/2", async () => {
    const s = await serve(["--grpc-port", "0", "--envoy-config", config, "--grpc-idle-timeout", "1s"]);
    try {
      const address = grpcAddress(s);
      const pinging = idleSession(address);
      const pinger = setInterval(() => {
        if (!pinging.session.closed && !pinging.session.destroyed) pinging.session.ping(() => undefined);
      }, 200);
      const [host, port] = [
        address.slice(0, address.lastIndexOf(":")),
        Number(address.slice(address.lastIndexOf(":") + 1)),
      ];
      const silent = tcp({ host, port });
      silent.on("error", () => undefined);
      const silentClosed = new Promise<void>((resolve) => silent.once("close", () => resolve()));
      // A client that made one call and then stayed connected without calling.
      const client = rlsClient(address);
      expect((await client.ask("app", [{ entries: [["user", "a"]] }])).overall_code).toBe("OK");
      let pings = 0;
      const counting = setInterval(() => pings++, 200);
      const waiting = within(60_000);
      while (waiting() && !pinging.isClosed()) await settle(100);
      clearInterval(pinger);
      clearInterval(counting);
      expect(pinging.isClosed()).toBe(true);
      expect(pings).toBeGreaterThan(0); // it was still pinging when closed
      await silentClosed; // the vitest timeout fails this if the server never closes it
      // The grpc-js client reconnects on its next call, as Envoy does.
      expect((await client.ask("app", [{ entries: [["user", "a"]] }])).overall_code).toBe("OK");
      client.close();
    } finally {
      await s.stop();
    }
  }, 90_000);

  it("over TLS too: a connection that finished its handshake but never sent the preface is closed, and the server lives on", async () => {
    const pki = makePki(tmp.dir);
    const s = await serve([
      "--grpc-port",
      "0",
      "--envoy-config",
      config,
      "--grpc-idle-timeout",
      "1s",
      "--grpc-tls-cert",
      pki.serverCertPath,
      "--grpc-tls-key",
      pki.serverKeyPath,
    ]);
    try {
      const address = grpcAddress(s);
      const port = Number(address.slice(address.lastIndexOf(":") + 1));
      const silent = tlsConnect({
        host: "127.0.0.1",
        port,
        ca: pki.ca,
        servername: "localhost",
        ALPNProtocols: ["h2"],
      });
      silent.on("error", () => undefined);
      await new Promise<void>((resolve) => silent.once("secureConnect", () => resolve()));
      await new Promise<void>((resolve) => silent.once("close", () => resolve())); // the vitest timeout fails this otherwise
      // (A TLS socket refuses a TCP reset: the first version crashed the service here.)
      const client = rlsClient(address, { tls: { ca: pki.ca } });
      expect((await client.ask("app", [{ entries: [["user", "t"]] }])).overall_code).toBe("OK");
      client.close();
      expect(s.child.exitCode).toBeNull();
    } finally {
      await s.stop();
    }
  }, 90_000);

  it("past --grpc-max-connections a new connection is closed on arrival; the open ones keep answering", async () => {
    const s = await serve(["--grpc-port", "0", "--envoy-config", config, "--grpc-max-connections", "3"]);
    const held: ReturnType<typeof idleSession>[] = [];
    try {
      const address = grpcAddress(s);
      for (let i = 0; i < 3; i++) {
        const h = idleSession(address);
        await new Promise<void>((resolve, reject) => {
          h.session.once("connect", () => resolve());
          h.session.once("error", reject);
        });
        held.push(h);
      }
      // Each of the three answers a ping: the server holds them.
      for (const h of held)
        await new Promise<void>((resolve, reject) => h.session.ping((e) => (e ? reject(e) : resolve())));
      const fourth = idleSession(address);
      await fourth.closed; // closed by the server (the vitest timeout fails this otherwise)
      for (const h of held) expect(h.isClosed()).toBe(false);
      held[0]?.session.close();
      await held[0]?.closed;
      // A slot is free again: a client connects and is answered.
      const waiting = within(30_000);
      let answered = false;
      while (waiting() && !answered) {
        const client = rlsClient(address);
        answered = await client.ask("app", [{ entries: [["user", "b"]] }]).then(
          (r) => r.overall_code === "OK",
          () => false,
        );
        client.close();
        if (!answered) await settle(100);
      }
      expect(answered).toBe(true);
    } finally {
      for (const h of held) h.session.destroy();
      await s.stop();
    }
  }, 90_000);
});
