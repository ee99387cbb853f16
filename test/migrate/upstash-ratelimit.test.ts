// The @upstash/ratelimit migration side by side. The peer needs only an `@upstash/redis` client,
// so it runs here against the REST bridge of test/edge (upstash-bridge.ts) in front of a real
// Redis, as sluice's RedisStore does with the same client: the same keys, the same requests,
// compared on `success`/`allowed`, which request is refused, `remaining` and the reset instant
// (the peer's `reset` is a Unix time in ms; sluice's `resetMs` is a duration from now).
// @upstash/ratelimit is a devDependency (pinned); UPSTASH_RATELIMIT_DIR may name another
// node_modules holding it, to check another version; the suite fails when it is missing.
// docs/migrate/upstash-ratelimit.md states what it found.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Redis as Upstash } from "@upstash/redis";
import { createLimiter, type LimitSpec } from "sluice";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startUpstashBridge, type UpstashBridge } from "../edge/upstash-bridge.ts";
import { findRedis, noRedis, type SharedRedis, uniquePrefix, WORK_BOUND_MS } from "../support/redis-server.ts";

/** The peer's surface this test uses. */
interface Peer {
  Ratelimit: {
    new (o: {
      redis: Upstash;
      limiter: unknown;
      prefix: string;
      ephemeralCache: false;
      analytics: false;
    }): {
      limit(id: string): Promise<{ success: boolean; limit: number; remaining: number; reset: number }>;
    };
    fixedWindow(tokens: number, window: string): unknown;
    slidingWindow(tokens: number, window: string): unknown;
    tokenBucket(refillRate: number, interval: string, maxTokens: number): unknown;
  };
}

const dir = process.env.UPSTASH_RATELIMIT_DIR ?? join(process.cwd(), "node_modules");
const entry = dir === undefined ? undefined : join(dir, "@upstash", "ratelimit", "dist", "index.mjs");
const peer: Peer | undefined =
  entry !== undefined && existsSync(entry) ? ((await import(pathToFileURL(entry).href)) as Peer) : undefined;
// A devDependency: its absence is a broken install, not a reason to skip.
if (peer === undefined) throw new Error(`@upstash/ratelimit not found at ${entry} (npm ci installs it)`);

const redis: SharedRedis | undefined = peer === undefined ? undefined : await findRedis();
if (peer !== undefined && redis === undefined) noRedis("the @upstash/ratelimit side by side");

/**
 * The client as the peer gets it: its scripts open with `#!lua flags=allow-key-locking`, a flag
 * Upstash's server takes and Redis 7.0 refuses ("Unexpected flag in script shebang"). Dropping
 * that first line leaves each script's logic as it is; the peer's EVALSHA of the flagged
 * script's hash then answers NOSCRIPT, and it falls back to EVAL of the script, as it does on
 * any fresh server.
 */
function withoutUpstashFlags(client: Upstash): Upstash {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === "eval") {
        return (script: string, keys: string[], args: unknown[]) =>
          target.eval(script.replace(/^#!lua flags=[^\n]*/, ""), keys, args);
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** One answer, as both report it: the reset as a Unix time in ms. */
interface Answer {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetAt: number;
  /** sluice only: when a denied request may come back (`now + retryAfterMs`). */
  retryAt?: number;
}

/**
 * The two clocks are read on either side of a REST round trip through the bridge: instants
 * agree within this bound (a bound on drift between readings, not a speed claim).
 */
const CLOCKS_MS = 2_000;

describe.skipIf(peer === undefined || redis === undefined)(
  "@upstash/ratelimit ↔ sluice, one @upstash/redis client",
  () => {
    let bridge: UpstashBridge;
    let client: Upstash;
    let peerClient: Upstash;
    beforeAll(async () => {
      bridge = await startUpstashBridge(redis?.url ?? "");
      client = new Upstash({ url: bridge.url, token: bridge.token, retry: false, enableTelemetry: false });
      peerClient = withoutUpstashFlags(client);
    });
    afterAll(async () => {
      await bridge?.close();
      await redis?.owned?.dispose();
    });

    /**
     * What the peer's `reset` is in sluice's terms: `"reset"` (the same instant as `resetMs`) or
     * `"window-before-reset"` (sluice's `resetMs` is one window later: the peer's `reset` is the end
     * of the current window, sluice's the moment the key is full again) or `"refill"` (the peer's
     * `reset` is the next refill, sluice's `resetMs` the moment the bucket is full again).
     */
    type Reset = "reset" | "window-before-reset" | "refill";
    const cases: { name: string; limiter: (p: Peer) => unknown; spec: LimitSpec; n: number; reset: Reset }[] = [
      {
        name: "fixedWindow(3, '60 s') ↔ fixed-window",
        limiter: (p) => p.Ratelimit.fixedWindow(3, "60 s"),
        spec: { algorithm: "fixed-window", limit: 3, windowMs: 60_000 },
        n: 5,
        reset: "reset",
      },
      {
        name: "slidingWindow(3, '60 s') ↔ sliding-window",
        limiter: (p) => p.Ratelimit.slidingWindow(3, "60 s"),
        spec: { algorithm: "sliding-window", limit: 3, windowMs: 60_000 },
        n: 5,
        reset: "window-before-reset",
      },
      {
        name: "tokenBucket(1, '60 s', 3) ↔ token-bucket",
        limiter: (p) => p.Ratelimit.tokenBucket(1, "60 s", 3),
        spec: { algorithm: "token-bucket", capacity: 3, refillPerSecond: 1 / 60 },
        n: 5,
        reset: "refill",
      },
    ];

    it.each(cases)("$name: the same refusals, remaining and reset", async ({ limiter, spec, n, reset }) => {
      // A window boundary crossed mid-sequence changes both answers: then the sequence is run again
      // on fresh keys (each reading its own clock), at most three times.
      for (let attempt = 0; ; attempt++) {
        const prefix = uniquePrefix("upstash-peer");
        const p = peer as Peer;
        const theirs = new p.Ratelimit({
          redis: peerClient,
          limiter: limiter(p),
          prefix,
          ephemeralCache: false,
          analytics: false,
        });
        const store = new RedisStore({
          client,
          prefix: `${prefix}:sluice`,
          timeoutMs: WORK_BOUND_MS,
        });
        const ours = createLimiter(spec, { store, name: "api" });
        const a: Answer[] = [];
        const b: Answer[] = [];
        for (let i = 0; i < n; i++) {
          const r = await theirs.limit("user-1");
          a.push({ allowed: r.success, limit: r.limit, remaining: r.remaining, resetAt: r.reset });
          const d = await ours.tryAcquire("user-1");
          const now = Date.now();
          b.push({
            allowed: d.allowed,
            limit: d.limit,
            remaining: d.remaining,
            resetAt: now + d.resetMs,
            ...(d.allowed ? {} : { retryAt: now + d.retryAfterMs }),
          });
        }
        await store.close?.();
        const windows = new Set(a.map((x) => Math.floor(x.resetAt / 60_000)));
        if (windows.size > 1 && attempt < 2) continue;
        expect(b.map((x) => x.allowed)).toEqual(a.map((x) => x.allowed));
        expect(b.map((x) => x.remaining)).toEqual(a.map((x) => x.remaining));
        expect(b.map((x) => x.limit)).toEqual(a.map((x) => x.limit));
        expect(
          a.some((x) => !x.allowed),
          "the sequence reaches a refusal",
        ).toBe(true);
        a.forEach((theirs, i) => {
          const ours = b[i] as Answer;
          const at = `request ${i + 1}`;
          // A refusal: sluice's retryAfterMs lands where the peer's reset is, except in the sliding
          // window: there the peer rounds the previous window's weighted count down (`math.floor`
          // in its script), so it admits one again as its window turns over, while sluice weighs
          // it exactly: 3 counted, limit 3, the retry passes once a third of the next window is
          // gone (3 × (1 − 1/3) + 1 = 3), 20 s after the peer's reset.
          const later = reset === "window-before-reset" ? 20_000 : 0;
          if (ours.retryAt !== undefined)
            expect(Math.abs(ours.retryAt - later - theirs.resetAt), at).toBeLessThan(CLOCKS_MS);
          if (reset === "reset") expect(Math.abs(ours.resetAt - theirs.resetAt), at).toBeLessThan(CLOCKS_MS);
          if (reset === "window-before-reset") {
            expect(Math.abs(ours.resetAt - 60_000 - theirs.resetAt), at).toBeLessThan(CLOCKS_MS);
          }
        });
        if (reset === "refill") {
          // The peer's reset is the next refill (60 s after the first request) on every answer;
          // sluice's resetMs is when the bucket is full again: one refill per token taken.
          const first = a[0] as Answer;
          const ours = b.map((x) => x.resetAt - first.resetAt);
          expect(ours.map((ms) => Math.round(ms / 60_000))).toEqual([0, 1, 2, 2, 2]);
        }
        return;
      }
    });
  },
);
