// The lease attack on the Node http middleware (SPEC §16: "never more than limit in flight";
// "no path leaks a slot"): a real server, seeded waves of requests of two keys whose clients
// finish, abort their fetch mid-handler, or destroy their socket, against a handler that counts
// its own work in flight. With countOn "handler" a request whose client left keeps its slot until
// its handler answers, so the handler's own count never passes the limit; at rest every slot is
// free. The seed is printed.
import { once } from "node:events";
import http from "node:http";
import { connect } from "node:net";
import type { Decision } from "sluice";
import { rateLimit } from "sluice/http";
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../src/core/seeded-random.ts";
import { SEED } from "../support/seed.ts";

const LIMIT = 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("node http: leases under aborts (seeded)", () => {
  it.each(["handler", "response"] as const)(
    "countOn %s: the limit holds and nothing leaks",
    async (countOn) => {
      const rnd = mulberry32(SEED);
      console.log(`lease stress (countOn ${countOn}): seed ${SEED}`);
      const limit = rateLimit({
        spec: { algorithm: "concurrency", limit: LIMIT, leaseMs: 60_000 },
        key: (req) => String(req.headers["x-user"]),
        countOn,
      });
      const inFlight = new Map<string, number>();
      let maxSeen = 0;
      let handled = 0;
      const server = http.createServer(async (req, res) => {
        if (!(await limit(req, res))) return;
        const key = String(req.headers["x-user"]);
        const n = (inFlight.get(key) ?? 0) + 1;
        inFlight.set(key, n);
        maxSeen = Math.max(maxSeen, n);
        await sleep(Number(req.headers["x-ms"]));
        inFlight.set(key, (inFlight.get(key) ?? 1) - 1);
        handled++;
        res.end("ok");
      });
      server.listen(0, "127.0.0.1");
      await once(server, "listening");
      const { port } = server.address() as { port: number };
      const url = `http://127.0.0.1:${port}/`;
      const kinds: Record<string, number> = {};
      const one = async (i: number) => {
        const key = rnd() < 0.5 ? "a" : "b";
        const ms = Math.floor(rnd() * 25);
        const r = rnd();
        const kind = r < 0.5 ? "fetch" : r < 0.8 ? "abort" : "destroy";
        kinds[kind] = (kinds[kind] ?? 0) + 1;
        await sleep(Math.floor(rnd() * 10) + (i % 7));
        if (kind === "destroy") {
          await new Promise<void>((resolve) => {
            const socket = connect(port, "127.0.0.1", () => {
              socket.write(`GET / HTTP/1.1\r\nHost: x\r\nx-user: ${key}\r\nx-ms: ${ms}\r\n\r\n`);
              setTimeout(() => socket.destroy(), Math.floor(ms / 2));
            });
            socket.once("error", () => resolve());
            socket.once("close", () => resolve());
          });
          return;
        }
        const ac = new AbortController();
        if (kind === "abort") setTimeout(() => ac.abort(), Math.floor(ms / 2));
        try {
          const res = await fetch(url, { headers: { "x-user": key, "x-ms": String(ms) }, signal: ac.signal });
          await res.text();
        } catch {
          // aborted
        }
      };
      for (let wave = 0; wave < 6; wave++) await Promise.all(Array.from({ length: 30 }, (_, i) => one(i)));
      // Let handlers whose clients left finish.
      const deadline = Date.now() + 5000;
      while ([...inFlight.values()].some((n) => n > 0) && Date.now() < deadline) await sleep(10);
      // A release runs on the response's close, which a loaded machine may deliver late: wait
      // (bounded) for the slots to come back; a leaked one never does.
      const freeAtRest = async () =>
        (await Promise.all(["a", "b"].map(async (k) => (await limit.peek(k)) as Decision))).map((d) =>
          d.allowed ? d.remaining + 1 : 0,
        );
      let rest = await freeAtRest();
      for (const until = Date.now() + 10_000; rest.some((n) => n !== LIMIT) && Date.now() < until; ) {
        await sleep(50);
        rest = await freeAtRest();
      }
      server.close();
      console.log(`handled ${handled}, max in flight ${maxSeen}, ${JSON.stringify(kinds)}`);
      expect(handled).toBeGreaterThan(20);
      expect(kinds.abort ?? 0).toBeGreaterThan(20);
      expect(kinds.destroy ?? 0).toBeGreaterThan(10);
      expect(rest, "free slots at rest").toEqual([LIMIT, LIMIT]);
      if (countOn === "handler") expect(maxSeen).toBeLessThanOrEqual(LIMIT);
    },
    60_000,
  );
});
