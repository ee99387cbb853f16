import { describe, expect, it } from "vitest";
import { withTimeout } from "./with-timeout.ts";

const never = () => new Promise<never>(() => {});

describe("withTimeout", () => {
  it("settles with the promise when it wins", async () => {
    await expect(withTimeout(Promise.resolve(7), 1000, () => 0)).resolves.toBe(7);
    await expect(withTimeout(Promise.reject(new Error("boom")), 1000, () => 0)).rejects.toThrow("boom");
  });

  it("settles with onTimeout's value, or its error, when the promise is too slow", async () => {
    await expect(withTimeout(never(), 1, () => "late")).resolves.toBe("late");
    await expect(
      withTimeout(never(), 1, () => {
        throw new Error("timed out");
      }),
    ).rejects.toThrow("timed out");
    await expect(withTimeout(never(), 1, () => Promise.resolve("async"))).resolves.toBe("async");
  });

  it("ignores the promise once the timeout answered (a late rejection is not unhandled)", async () => {
    let fail: (e: Error) => void = () => {};
    const slow = new Promise<number>((_, reject) => {
      fail = reject;
    });
    await expect(withTimeout(slow, 1, () => -1)).resolves.toBe(-1);
    fail(new Error("too late"));
    await new Promise((r) => setImmediate(r));
  });
});
