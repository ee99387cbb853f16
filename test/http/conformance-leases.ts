/**
 * Leases through every HTTP adapter (SPEC §16, issue 33): a rule with a concurrency member
 * holds its slot while the request is in flight and releases it exactly once when the response
 * finishes, when the handler throws, or when the client leaves (an aborted fetch, a socket
 * destroyed while the handler runs or while the body streams). At rest the in-flight count is 0:
 * the middleware's `peek` shows every slot free. Clocks are manual and leases last a minute,
 * so only a release frees a slot here: a leak stays visible.
 */
import { connect } from "node:net";
import { type Decision, ManualClock } from "sluice";
import { afterEach, describe, expect, test } from "vitest";
import { within } from "../support/poll.ts";
import type { Adapter, Served } from "./conformance.ts";

const LIMIT = 2;
const spec = { algorithm: "concurrency", limit: LIMIT, leaseMs: 60_000 } as const;

/** Free slots of key "k" now, through the middleware's own handle. */
async function free(served: Served): Promise<number> {
  const d = (await served.handles?.peek("k")) as Decision;
  return d.allowed ? d.remaining + 1 : 0;
}

/** Waits (polling, bounded) until every slot is free again; fails naming how many are still held. */
async function atRest(served: Served): Promise<void> {
  const more = within();
  let slots = await free(served);
  while (slots < LIMIT && more()) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    slots = await free(served);
  }
  expect(LIMIT - slots, "requests still counted in flight at rest").toBe(0);
}

/** Sends GET `path` on a raw socket and destroys it once `when` says so (the first bytes, or at once). */
function destroyed(url: string, path: string, when: "connected" | "first-bytes"): Promise<void> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: keep-alive\r\n\r\n`);
      if (when === "connected") setImmediate(() => socket.destroy());
    });
    socket.once("data", () => socket.destroy());
    socket.once("error", reject);
    socket.once("close", () => resolve());
  });
}

/** The lease suite for one adapter. */
export function leases(name: string, adapter: Adapter): void {
  describe(`${name}: leases (concurrency spec)`, () => {
    let served: Served | undefined;
    const start = async (options: Record<string, unknown> = {}) => {
      served = await adapter.serve({ spec, clock: new ManualClock(1_800_000_000_000), key: () => "k", ...options });
      return served;
    };
    afterEach(async () => {
      await served?.close();
      served = undefined;
    });

    test("each finished response releases its slot: many sequential requests pass, and none stays counted", async () => {
      const s = await start();
      for (const path of ["/a", "/status/404", "/status/500", "/stream", "/a", "/throw", "/throw", "/stream"]) {
        const res = await fetch(`${s.url}${path}`);
        expect(res.status, path).not.toBe(429);
        await res.text();
      }
      await atRest(s);
    });

    test("a request in flight holds its slot (the next ones are refused), and frees it when its client aborts", async () => {
      const s = await start();
      const hang = s.hang as NonNullable<Served["hang"]>;
      const controller = new AbortController();
      const hung = fetch(`${s.url}/hang`, { signal: controller.signal });
      await hang.started;
      expect(await free(s)).toBe(LIMIT - 1);
      const held = await fetch(`${s.url}/a`); // the second slot, released when it finishes
      expect(held.status).toBe(200);
      await held.text();
      controller.abort();
      await expect(hung).rejects.toThrow();
      await hang.closed;
      await atRest(s);
    });

    test("all slots taken: 429 with Retry-After (the oldest lease's expiry, an upper bound)", async () => {
      const s = await start({ spec: { ...spec, limit: 1 } });
      const hang = s.hang as NonNullable<Served["hang"]>;
      const controller = new AbortController();
      const hung = fetch(`${s.url}/hang`, { signal: controller.signal });
      await hang.started;
      const refused = await fetch(`${s.url}/a`);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("60");
      await refused.text();
      controller.abort();
      await expect(hung).rejects.toThrow();
      await hang.closed;
      const again = await fetch(`${s.url}/a`);
      expect(again.status).toBe(200);
      await again.text();
    });

    test("sockets destroyed while the handler runs or while the body streams leak no slot", async () => {
      const s = await start();
      const hang = s.hang as NonNullable<Served["hang"]>;
      await destroyed(s.url, "/hang", "connected");
      await hang.started;
      await hang.closed;
      for (let i = 0; i < 6; i++) await destroyed(s.url, "/stream", "first-bytes");
      for (let i = 0; i < 6; i++) await destroyed(s.url, "/a", i % 2 === 0 ? "connected" : "first-bytes");
      await atRest(s);
    });

    test("a handler answering after its client left releases once (countOn: handler holds the slot until then)", async () => {
      const s = await start({ count: "succeeded", countOn: "handler" });
      const hang = s.hang as NonNullable<Served["hang"]>;
      const controller = new AbortController();
      const hung = fetch(`${s.url}/hang/200`, { signal: controller.signal });
      await hang.started;
      controller.abort();
      await expect(hung).rejects.toThrow();
      await hang.closed;
      await atRest(s);
    });
  });
}
