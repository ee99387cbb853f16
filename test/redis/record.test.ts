// One Redis key per (rule, key): a composite's members and its ban live in one record, written
// and expired as a whole at the record's freshAt (the latest of its members' and its ban's),
// and a banned key's decision is rebuilt exactly as the core builds it.
import { createLimiter, type Decision, ManualClock, MemoryStore, type RuleSpec } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("records (standalone)");

const SPEC: RuleSpec = [
  { algorithm: "fixed-window", limit: 3, windowMs: 10_000 },
  { algorithm: "sliding-log", limit: 2, windowMs: 4_000 },
];
const BAN = { after: 1, withinMs: 1_000, forMs: 20_000 };

describe.skipIf(redis === undefined)("Redis records", () => {
  const clients = useStandaloneClients(redis);

  it("a composite with a ban is one key, expiring at the record's freshAt, and bans like the core", async () => {
    const { io } = clients;
    const prefix = uniquePrefix("record");
    // 1 s into a 10 s window. Expiries are relative: Redis adds them to its own clock.
    const start = Math.floor(Date.now() / 10_000) * 10_000 + 1_000;
    const clock = new ManualClock(start);
    const remote = createLimiter(SPEC, {
      clock,
      name: "login",
      ban: BAN,
      store: new RedisStore({ client: io, prefix }),
    });
    const memory = createLimiter(SPEC, { clock, name: "login", ban: BAN, store: new MemoryStore() });
    const keys = async () => (await io.keys(`${prefix}*`)) as string[];
    // Bounds on the expiry Redis set for the record, in ms from the write: it added the TTL to
    // its own clock at some instant between `before` and `after`.
    const expiresIn = async (act: () => Promise<Decision>): Promise<[Decision, number, number]> => {
      const before = Date.now();
      const d = await act();
      const after = Date.now();
      const [key] = await keys();
      const at = Number(await io.pexpiretime(key as string));
      return [d, at - after, at - before];
    };

    for (let i = 0; i < 2; i++) {
      const [d, min, max] = await expiresIn(() => remote.tryAcquire("k"));
      expect(d).toEqual(memory.tryAcquire("k"));
      // Fresh when the fixed window ends (9 s on), after the log's newest entry (4 s on).
      expect(min).toBeLessThanOrEqual(9_000);
      expect(max).toBeGreaterThanOrEqual(9_000);
    }
    expect(await keys()).toHaveLength(1);

    // The log is full: the denial bans at once (after: 1) for 20 s, past every member's freshAt.
    const [banned, min, max] = await expiresIn(() => remote.tryAcquire("k"));
    expect(banned).toEqual(memory.tryAcquire("k"));
    expect(banned).toMatchObject({ allowed: false, banned: true, retryAfterMs: 20_000, resetMs: 20_000 });
    expect(banned.parts).toHaveLength(2);
    expect(min).toBeLessThanOrEqual(20_000);
    expect(max).toBeGreaterThanOrEqual(20_000);
    expect(await keys()).toHaveLength(1);

    // Still banned after the members would allow again; a refund changes nothing while banned.
    clock.advance(12_000);
    expect(await remote.refund("k")).toEqual(memory.refund("k"));
    const later = await remote.tryAcquire("k");
    expect(later).toEqual(memory.tryAcquire("k"));
    expect(later).toMatchObject({ allowed: false, banned: true, retryAfterMs: 8_000 });
    clock.advance(8_000);
    expect(await remote.tryAcquire("k")).toEqual(memory.tryAcquire("k"));
    expect(await remote.peek("k")).toMatchObject({ allowed: true });
    await remote.reset("k");
    expect(await keys()).toHaveLength(0);
    remote.close();
    memory.close();
  });
});
