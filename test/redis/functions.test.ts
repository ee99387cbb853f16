// How checks reach the check program (src/stores/redis/check-call.ts), on Redis processes
// started here (INFO commandstats counts only this file's commands): FCALL of the function
// library where the server runs functions, the library loaded again after FUNCTION FLUSH with
// nothing counted twice, and EVALSHA where FCALL and FUNCTION are refused (an ACL, as on
// managed services and servers older than 7).
import type { Redis } from "ioredis";
import { createClient } from "redis";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { ownedRedisKit, spendThroughFaults } from "../support/owned-redis-kit.ts";
import { canStartRedis, uniquePrefix } from "../support/redis-server.ts";

const canStart = await canStartRedis("functions");
const { cleanups, ownRedis, ioredis } = ownedRedisKit();

/** Calls of each command so far, refused ones apart (`<name>:rejected`). */
async function calls(admin: Redis): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const info = await admin.info("commandstats");
  for (const m of info.matchAll(/cmdstat_([\w|]+):calls=(\d+).*?rejected_calls=(\d+)/g)) {
    out[m[1] as string] = Number(m[2]);
    out[`${m[1]}:rejected`] = Number(m[3]);
  }
  return out;
}

describe.skipIf(!canStart)("Redis Functions", () => {
  it("checks go by FCALL; FUNCTION FLUSH mid-run is absorbed, with nothing counted twice (ioredis and node-redis)", async () => {
    const server = await ownRedis();
    const admin = ioredis(server.url);
    const node = createClient({ url: server.url });
    await node.connect();
    cleanups.push(() => node.close());
    for (const client of [ioredis(server.url), node]) {
      const store = new RedisStore({ client, prefix: uniquePrefix("fn") });
      const before = await calls(admin);
      const allowed = await spendThroughFaults(store, (i) =>
        i % 7 === 3 ? admin.call("FUNCTION", "FLUSH") : Promise.resolve(),
      );
      expect(allowed).toBe(40);
      const after = await calls(admin);
      // Every round but those the deny cache answers once the limit is spent.
      expect((after.fcall ?? 0) - (before.fcall ?? 0)).toBeGreaterThanOrEqual(20);
      expect((after.evalsha ?? 0) - (before.evalsha ?? 0)).toBe(0);
      // Loaded after each flush (9 flushes), not once per call.
      expect((after["function|load"] ?? 0) - (before["function|load"] ?? 0)).toBeLessThanOrEqual(12);
    }
  });

  it("a user refused FCALL and FUNCTION by an ACL gets EVALSHA, after one refused call", async () => {
    const server = await ownRedis();
    const admin = ioredis(server.url);
    await admin.call("ACL", "SETUSER", "scripts", "on", "nopass", "~*", "&*", "+@all", "-fcall", "-function");
    const client = ioredis(server.url, { username: "scripts", password: "x" });
    const store = new RedisStore({ client, prefix: uniquePrefix("acl") });
    expect(await spendThroughFaults(store, () => Promise.resolve())).toBe(40);
    const after = await calls(admin);
    expect(after["fcall:rejected"]).toBe(1);
    expect(after.fcall ?? 0).toBe(0);
    expect(after.evalsha).toBeGreaterThanOrEqual(20);
  });
});
