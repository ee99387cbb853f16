// The end of a pause on a hosted fleet queue (fleet-queue-host.ts: ClusterStore's socket host,
// SharedMemoryStore's hosting thread) does not release the whole queue at once: the host cools
// the key down after each pause as queue.lua and the local queue do (coolDownEnd,
// src/core/fleet-queue.ts): one job at a time, for as long as the pause lasted. Two owners on one
// store (two throttles of one name, as two processes would have), a gcra of 40/s with its full
// burst against an upstream simulator admitting 5 a second: before, every waiting job went when
// a pause ended and each one past the upstream's limit got its 429.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createThrottle, type Store, systemClock } from "../../src/index.ts";
import { ClusterStore } from "../../src/stores/cluster/cluster-store.ts";
import { SharedMemoryStore } from "../../src/stores/threads/shared-memory-store.ts";
import { startUpstream } from "../support/upstream-server.mjs";
import { afterFirstPause } from "./pause-storm-count.ts";

const dir = mkdtempSync(join(tmpdir(), "sluice-storm-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const WINDOW_MS = 1000;
const JOBS = 15;

const kinds: Record<string, () => [Store, Store]> = {
  SharedMemoryStore: () => {
    const store = new SharedMemoryStore({ maxKeys: 1000, recordWords: 16 });
    return [store, store];
  },
  "ClusterStore (socket)": () => {
    const socket = join(dir, `${Math.random().toString(36).slice(2)}.sock`);
    return [new ClusterStore({ socket, timeoutMs: 10_000 }), new ClusterStore({ socket, timeoutMs: 10_000 })];
  },
};

describe.each(Object.keys(kinds))("two owners on %s, a burst-allowing rate far above the upstream's", (kind) => {
  it("after the first pause, at most 2 429s a pause (one job at a time while the key cools down)", {
    timeout: 30_000,
  }, async () => {
    const stores = (kinds[kind] as () => [Store, Store])();
    const upstream = await startUpstream({ limit: 5, windowMs: WINDOW_MS });
    try {
      const options = {
        name: `storm-${Math.random().toString(36).slice(2)}`,
        clock: systemClock,
        rate: { algorithm: "gcra", limit: 40, periodMs: 1000 },
        retries: 50,
        // The instant each request is sent rides on its job's header (pause-storm-count.ts).
        fetch: ((input: string, init: { headers: Record<string, string> }) =>
          fetch(input, {
            ...init,
            headers: { ...init.headers, "x-job": `${init.headers["x-job"]}@${Date.now()}` },
          })) as unknown as typeof fetch,
      } as const;
      const throttles = stores.map((store) => createThrottle({ ...options, store }));
      // Both owners' links open first (a job each), so the burst meets one fleet queue.
      await Promise.all(throttles.map((t) => t.schedule(async () => 1, { key: "warm-up" })));
      const statuses = await Promise.all(
        throttles.flatMap((t, i) =>
          Array.from({ length: JOBS }, (_, j) =>
            t.fetch(upstream.url, { headers: { "x-job": `${i}-${j}` } }, { key: "upstream" }).then(async (r) => {
              await r.text();
              return r.status;
            }),
          ),
        ),
      );
      await Promise.all(throttles.map((t) => t.close()));
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      const { after, perPause } = afterFirstPause(upstream.log, WINDOW_MS);
      const all = upstream.log.filter((e) => e.status === 429).length;
      console.log(`${kind}: 429s a pause after the first pause: ${JSON.stringify(perPause)} (${all} in all)`);
      expect(after).toBeGreaterThan(0);
      expect(Math.max(0, ...perPause)).toBeLessThanOrEqual(2);
    } finally {
      await upstream.close();
      for (const s of new Set(stores)) await (s as { close?: () => unknown }).close?.();
    }
  });
});
