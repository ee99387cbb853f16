// The deadline guard wrapped around the check script: a call that starts in Redis after its
// deadline (server clock) does nothing and answers {'late', serverMs}; any other call's reply
// is {figures, serverMs}: the figures as one JSON text, then the server time. Checked on the
// script itself, against the shared Redis.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkScript } from "../../src/stores/redis/script.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("deadline guard");

describe.skipIf(redis === undefined)("the deadline guard", () => {
  let client: Redis;
  beforeAll(() => {
    client = new Redis(redis?.url ?? "");
  });
  afterAll(async () => {
    client?.disconnect();
  });

  it("refuses a call past its deadline without touching a key, and reports the server time", async () => {
    const { source } = checkScript();
    const key = `${uniquePrefix("guard")}{t}k`;
    // One fixed-window check (limit 5 per 60 s, no ban) at now = 1000, in the batcher's argument
    // layout: deadline, grace, rule count, the rule (members, ban after/within/for, code and two
    // parameters), then a uniform check: rule 1, op "c", cost 1, now.
    const args = (deadline: string) => [
      deadline,
      "0",
      "1",
      "1",
      "0",
      "0",
      "0",
      "f",
      "5",
      "60000",
      "=",
      "1",
      "c",
      "1",
      "1000",
    ];
    const [seconds] = await client.time();
    const serverMs = Number(seconds) * 1000;
    const late = (await client.eval(source, 1, key, ...args(String(serverMs - 10_000)))) as unknown[];
    expect(late[0]).toBe("late");
    expect(late[1]).toBeGreaterThanOrEqual(serverMs);
    expect(await client.exists(key)).toBe(0);
    const ran = (await client.eval(source, 1, key, ...args(String(serverMs + 60_000)))) as unknown[];
    // The figures as one JSON text (see reply.ts), then the server time.
    expect(JSON.parse(ran[0] as string)).toEqual([1, 4, 0, 59_000]);
    expect(ran[1]).toBeGreaterThanOrEqual(serverMs);
    expect(await client.exists(key)).toBe(1);
    await client.del(key);
  });
});
