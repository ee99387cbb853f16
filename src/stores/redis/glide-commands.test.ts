import { describe, expect, it } from "vitest";
import { glideCommands, isGlide, redisError } from "./glide-commands.ts";
import { glideRefusal } from "./glide-pubsub.ts";

describe("valkey-glide errors read as Redis's codes", () => {
  it.each([
    [
      "An error was signalled by the server: - NoScriptError: No matching script. Please use EVAL.",
      "NOSCRIPT No matching script. Please use EVAL.",
    ],
    [
      "An error was signalled by the server: - TryAgain: Multiple keys request during rehashing of slot",
      "TRYAGAIN Multiple keys request during rehashing of slot",
    ],
    ["An error was signalled by the server: - ClusterDown: The cluster is down", "CLUSTERDOWN The cluster is down"],
    ["An error was signalled by the server: - Moved: 3999 127.0.0.1:6381", "MOVED 3999 127.0.0.1:6381"],
  ])("%s", (glide, redis) => {
    const original = new Error(glide);
    const converted = redisError(original) as Error;
    expect(converted.message).toBe(redis);
    expect(converted.cause).toBe(original);
  });

  it("leaves other errors as they are", () => {
    const other = new Error("An error was signalled by the server: - ResponseError: WRONGTYPE");
    expect(redisError(other)).toBe(other);
  });

  it("tells a glide client apart by its calls (the real clients: test/redis/client-matrix.test.ts)", () => {
    const fn = () => undefined;
    expect(isGlide({ customCommand: fn, getSubscriptions: fn })).toBe(true);
    expect(isGlide({ customCommand: fn })).toBe(false);
    expect(glideCommands({ customCommand: fn, getSubscriptions: fn }).cluster).toBe(false);
    expect(glideCommands({ customCommand: fn, getSubscriptions: fn, invokeScriptWithRoute: fn }).cluster).toBe(true);
  });
});

describe("a valkey-glide client's own subscription (the fleet queue's owner channel)", () => {
  const fn = () => undefined;
  const dynamic = { customCommand: fn, getSubscriptions: fn, subscribe: fn, getPubSubMessage: fn };
  it.each([
    [
      "a client without run-time subscribe()",
      { customCommand: fn, getSubscriptions: fn },
      /no run-time `subscribe\(\)`/,
    ],
    ["a RESP2 client (SUBSCRIBE would block its other commands)", { ...dynamic, config: { protocol: 1 } }, /RESP2/],
    [
      "a client whose messages go to its own callback",
      { ...dynamic, config: { pubsubSubscriptions: { callback: fn } } },
      /callback it was created with/,
    ],
    ["a closed client", { ...dynamic, isClosed: true }, /closed/],
  ])("refuses %s, saying why", (_, client, why) => {
    expect(glideRefusal(client)).toMatch(why);
  });

  it("accepts a RESP3 client without a callback (the real one: test/throttle/fleet-queue-clients.test.ts)", () => {
    expect(glideRefusal({ ...dynamic, config: { protocol: 0 } })).toBeUndefined();
    expect(glideRefusal(dynamic)).toBeUndefined();
  });
});
