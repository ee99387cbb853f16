// The one bounded call to a remote store (exchange.ts boundedCall), which batches and a fleet
// queue's calls both go through: a call that never settles fails with the timeout's StoreError
// after the store's timeoutMs, and any other failure becomes a StoreError naming the server.
import { describe, expect, it } from "vitest";
import { StoreError } from "../../core/errors.ts";
import { boundedCall } from "./exchange.ts";

describe("boundedCall", () => {
  it("a call that never settles fails with the timeout's StoreError, after telling `late`", async () => {
    let late = 0;
    const error = await boundedCall(new Promise<never>(() => {}), 5, "Redis (fleet queue)", () => late++).catch(
      (e: StoreError) => e,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect(error.message).toBe("Redis (fleet queue) did not answer within timeoutMs (5 ms)");
    expect(late).toBe(1);
  });

  it("a failure becomes a StoreError naming the server, with the original as cause; a StoreError passes as is", async () => {
    const cause = new Error("NOPERM");
    const error = await boundedCall(Promise.reject(cause), 1000, "Redis").catch((e: StoreError) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect(error.message).toBe("Redis failed: NOPERM");
    expect(error.cause).toBe(cause);
    const own = new StoreError("gone");
    expect(await boundedCall(Promise.reject(own), 1000, "Redis").catch((e) => e)).toBe(own);
    expect(await boundedCall(Promise.resolve(7), 1000, "Redis")).toBe(7);
  });
});
