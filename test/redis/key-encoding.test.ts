// Record keys carry every user key losslessly (src/stores/redis/keys.ts recordKeyOf). Clients
// send strings as UTF-8, which turns a lone surrogate into U+FFFD: without the escape, two keys
// differing only there shared one record in Redis whenever their hash tags (computed on the
// UTF-16 text) coincided, while the memory store kept them apart. Well-formed keys keep the
// name earlier versions gave their records (no migration).
import { createLimiter, ManualClock } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { hashTag, tagSeed } from "../../src/stores/redis/keys.ts";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";
import { recordingStore } from "../support/redis-topologies.ts";

const redis = await standaloneRedis("record key encoding");

/**
 * Two keys of rule `id` that UTF-8 renders alike (a lone low surrogate, "x", a lone surrogate:
 * U+FFFD "x" U+FFFD) and whose hash tags are equal, so they would share a Redis key; then keys
 * the escape itself must keep apart. (Keys differing in one code unit never share a tag:
 * FNV-1a's last step is a bijection.)
 */
function oddKeys(id: string): string[] {
  const seed = tagSeed(id);
  const byTag = new Map<string, string>();
  for (let a = 0xdc00; a <= 0xdfff; a++) {
    for (let b = 0xd800; b <= 0xdfff; b++) {
      const key = `${String.fromCharCode(a)}x${String.fromCharCode(b)}`;
      const tag = hashTag(seed, key);
      const twin = byTag.get(tag);
      // ~10,000 keys suffice: 2 million over 36^4 tags share many.
      if (twin !== undefined) return [twin, key, "\uFFFDx\uFFFD", "\u0001", "\u0001x", "\u0001AGEA"];
      byTag.set(tag, key);
    }
  }
  throw new Error(`no two such keys share a tag under ${id}`);
}

describe.skipIf(redis === undefined)("Redis record keys", () => {
  const clients = useStandaloneClients(redis);

  for (const kind of ["io", "node"] as const) {
    it(`${kind}: keys differing in a lone surrogate (or looking escaped) have records of their own`, async () => {
      const store = new RedisStore({ client: clients[kind], prefix: uniquePrefix("wtf") });
      const ids: string[] = [];
      const limiter = createLimiter(
        { algorithm: "fixed-window", limit: 1, windowMs: 60_000 },
        { store: recordingStore(store, ids), clock: new ManualClock(1_000), name: "wtf" },
      );
      await limiter.peek("bind");
      const keys = oddKeys(ids[0] as string);
      for (const key of keys) expect((await limiter.tryAcquire(key)).allowed, JSON.stringify(key)).toBe(true);
      for (const key of keys) expect((await limiter.tryAcquire(key)).allowed, JSON.stringify(key)).toBe(false);
      // A reset names the same record: that key alone passes again.
      const [first, second] = keys as [string, string];
      await limiter.reset(first);
      expect((await limiter.tryAcquire(first)).allowed).toBe(true);
      expect((await limiter.tryAcquire(second)).allowed).toBe(false);
      await store.close();
    });
  }

  it("a well-formed key ends its record key verbatim, as in earlier versions", async () => {
    const prefix = uniquePrefix("wtf-keep");
    const store = new RedisStore({ client: clients.io, prefix });
    const limiter = createLimiter({ algorithm: "gcra", limit: 5, periodMs: 60_000 }, { store, name: "api" });
    const keys = ["user:1", "é😀{x}", "a\u0000b", "\uFFFD"];
    for (const key of keys) expect((await limiter.tryAcquire(key)).failure).toBeUndefined();
    const stored = (await clients.io.keysBuffer(`${prefix}*`)).map((k) => k.toString("utf8"));
    expect(stored).toHaveLength(keys.length);
    for (const key of keys) {
      // prefix, {tag}, the 8-character rule digest, then the key.
      const middle = (k: string) => k.slice(prefix.length, k.length - key.length);
      const named = stored.filter((k) => k.endsWith(key) && /^\{[0-9a-z]{1,4}\}[\w-]{8}$/.test(middle(k)));
      expect(named, JSON.stringify(key)).toHaveLength(1);
    }
    await store.close();
  });
});
