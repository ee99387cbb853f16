// A block on a key of a rule without a ban lives in a spare word of the key's record
// (src/stores/threads/codec.ts `blockAt`). Raising a sliding log's limit can take that word for
// the log's timestamps: while a block placed on the rule may still run, such an update is refused
// with a ConfigError naming `recordWords` (before, it went through and lifted the block at once).
import { ConfigError, ManualClock, RateLimiterService } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";

const T0 = Date.UTC(2026, 11, 2, 9);
const HOUR = 3_600_000;
const log = (limit: number) => ({ algorithm: "sliding-log", limit, windowMs: 60_000 }) as const;

function blocked(recordWords?: number) {
  const clock = new ManualClock(T0);
  const store = new SharedMemoryStore({ maxKeys: 100, seed: 1, ...(recordWords === undefined ? {} : { recordWords }) });
  const service = new RateLimiterService({ clock, store });
  service.addRule("login", log(3));
  expect(service.check("login", "mallory").allowed).toBe(true);
  service.block("login", "mallory", HOUR);
  expect(service.check("login", "mallory").allowed).toBe(false);
  return { clock, store, service };
}

describe("SharedMemoryStore: updateRule and running blocks", () => {
  it("refuses an update whose records leave no word for a running block, and keeps the rule and the block", () => {
    const { service } = blocked();
    // limit 5: 1 + 5 words, all 6 of the default record.
    let error: unknown;
    try {
      service.updateRule("login", log(5));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ field: "recordWords", value: 7 });
    expect(String(error)).toMatch(/until 2026-12-02T10:00:00\.000Z.*recordWords: 7/);
    expect(service.check("login", "mallory").allowed).toBe(false);
    // An update that keeps a spare word is not refused, and the block holds through it.
    service.updateRule("login", log(4));
    expect(service.check("login", "mallory").allowed).toBe(false);
    expect(service.check("login", "alice").allowed).toBe(true);
  });

  it("accepts it once the blocks have ended, with the log's timestamps carried over", () => {
    const { clock, service } = blocked();
    clock.advance(HOUR);
    service.updateRule("login", log(5));
    // The block ended; the one admission an hour ago left the window: a fresh limit of 5.
    const admitted = Array.from({ length: 6 }, () => service.check("login", "mallory").allowed);
    expect(admitted).toEqual([true, true, true, true, true, false]);
  });

  it("accepts it in a store whose records keep a spare word, and the block holds", () => {
    const { service } = blocked(7);
    service.updateRule("login", log(5));
    expect(service.check("login", "mallory").allowed).toBe(false);
  });
});
