// Read-back mode of the ban state (core/ban.ts): a capped store's key read back from its summary
// counts strikes as a chain, also while banned, so that its ban never ends before the ban the
// key's exact record would have. At fixed instants on today's epoch, a ManualClock driving
// `decideRule` on records built by hand, and a seeded check that a chain over a superset of
// denials always bans at least as long as exact counting over the subset.
import fc from "fast-check";
import { ManualClock } from "sluice";
import { describe, expect, it } from "vitest";
import { type BanState, banFreshAt, countDenial, freshBan, markReadBack, settleReadBack } from "./ban.ts";
import { decideRule } from "./decide-rule.ts";
import { banState, compileRule, createRecord } from "./rule.ts";

const T = 1_800_000_000_000;
const INF = Number.POSITIVE_INFINITY;
const policy = { after: 2, withinMs: 1000, forMs: 5000 };
const SEED = Number(process.env.SLUICE_SEED ?? 1_800_000);

/** A chain state as the store marks it on a read-back record. */
function readBack(n: number, since: number, until: number): BanState {
  const s = { n, since, until };
  markReadBack(s);
  return s;
}

describe("markReadBack", () => {
  it("marks the state and keeps its numbers (a cell's span start is the chain's last denial)", () => {
    const s = { n: 3, since: T, until: T + 10 };
    markReadBack(s);
    expect(s).toEqual({ n: 3, since: T, until: T + 10, readBack: true });
    expect(() => markReadBack(undefined)).not.toThrow();
  });
});

describe("countDenial in read-back mode (a chain)", () => {
  // [instant, bans?, state after]: after 2 within 1000 for 5000.
  const table: Array<[number, boolean, Omit<BanState, "readBack">]> = [
    [T + 0, false, { n: 1, since: T, until: -INF }],
    [T + 600, true, { n: 2, since: T + 600, until: T + 5600 }],
    // During the ban: counted, and the ban extended (the count is not reset).
    [T + 1100, true, { n: 3, since: T + 1100, until: T + 6100 }],
    // 1599 after the chain began, 499 after its last denial: still the chain.
    [T + 1599, true, { n: 4, since: T + 1599, until: T + 6599 }],
    // withinMs after the last denial: a new chain; the running ban stays.
    [T + 2599, false, { n: 1, since: T + 2599, until: T + 6599 }],
    [T + 3598, true, { n: 2, since: T + 3598, until: T + 8598 }],
  ];
  it("a denial within withinMs of the last continues the chain; from the after-th on each one bans", () => {
    const s = readBack(0, -INF, -INF);
    for (const [at, bans, after] of table) {
      expect(countDenial(s, policy, at), `${at - T}`).toBe(bans);
      expect(s, `${at - T}`).toEqual({ ...after, readBack: true });
    }
  });

  it("never shortens a longer running ban, and a clock a little behind never moves the last denial back", () => {
    const s = readBack(1, T + 500, T + 99_000);
    expect(countDenial(s, policy, T + 400)).toBe(true);
    expect(s).toEqual({ n: 2, since: T + 500, until: T + 99_000, readBack: true });
  });

  it("the exact span counting is unchanged beside it (the same denials, not marked)", () => {
    const s = freshBan();
    const bans = table.map(([at]) => countDenial(s, policy, at));
    // Spans from T, T + 1100, T + 2599, each reset by the ban it starts.
    expect(bans).toEqual([false, true, false, true, false, true]);
    expect(s).toEqual({ n: 0, since: T + 2599, until: T + 8598 });
  });

  it("banFreshAt: the later of the ban's end and withinMs past the last denial", () => {
    expect(banFreshAt(readBack(3, T + 1000, T + 1500), policy)).toBe(T + 2000);
    expect(banFreshAt(readBack(3, T + 1000, T + 6000), policy)).toBe(T + 6000);
    expect(banFreshAt(readBack(0, -INF, -INF), policy)).toBe(-INF);
  });
});

describe("settleReadBack", () => {
  it("leaves the chain while the record matters, and makes it a fresh exact state once it does not", () => {
    const s = readBack(2, T, T + 5000);
    settleReadBack(s, T + 5000, T + 4999);
    expect(s).toEqual({ n: 2, since: T, until: T + 5000, readBack: true });
    settleReadBack(s, T + 5000, T + 5000);
    expect(s).toEqual({ ...freshBan(), readBack: false });
    const exact = { n: 1, since: T, until: -INF };
    settleReadBack(exact, -INF, T + 9999);
    expect(exact).toEqual({ n: 1, since: T, until: -INF });
  });
});

describe("decideRule on a read-back record", () => {
  const rule = compileRule([{ algorithm: "fixed-window", limit: 1, windowMs: 1000 }], policy);

  /** A record at T holding its one unit, with `ban` as its ban state. */
  function record(ban: BanState): unknown[] {
    const r = createRecord(rule) as unknown[];
    decideRule(rule, r, T, 1, "check");
    r[1] = ban;
    return r;
  }

  it("counts refusals while banned and extends the ban; an exact record does not", () => {
    const clock = new ManualClock(T + 100);
    const chain = record(readBack(0, -INF, T + 5000));
    const exact = record({ n: 0, since: -INF, until: T + 5000 });
    for (const at of [T + 100, T + 200]) {
      clock.set(at);
      expect(decideRule(rule, chain, clock.now(), 1, "check")).toMatchObject({ allowed: false, banned: true });
      expect(decideRule(rule, exact, clock.now(), 1, "check")).toMatchObject({ allowed: false, banned: true });
    }
    expect(banState(rule, chain)).toEqual({ n: 2, since: T + 200, until: T + 5200, readBack: true });
    expect(banState(rule, exact)).toEqual({ n: 0, since: -INF, until: T + 5000 });
    clock.set(T + 5100);
    expect(decideRule(rule, exact, clock.now(), 1, "check").allowed).toBe(true);
    expect(decideRule(rule, chain, clock.now(), 1, "check")).toMatchObject({ allowed: false, banned: true });
  });

  it("peeks and refunds count nothing", () => {
    const chain = record(readBack(1, T + 50, T + 5000));
    decideRule(rule, chain, T + 100, 1, "peek");
    decideRule(rule, chain, T + 100, 1, "refund");
    expect(banState(rule, chain)).toEqual({ n: 1, since: T + 50, until: T + 5000, readBack: true });
  });

  it("decides exactly again once the whole record is fresh, not while its window still counts", () => {
    const clock = new ManualClock(T + 500);
    // Not banned, one strike at T + 100; the window [T, T + 1000) is full.
    const chain = record(readBack(1, T + 100, -INF));
    expect(decideRule(rule, chain, clock.now(), 1, "peek").allowed).toBe(false);
    clock.set(T + 1100);
    // Fresh at T + 1100 (the window and withinMs past the strike): exact from here on.
    expect(decideRule(rule, chain, clock.now(), 1, "check").allowed).toBe(true);
    expect(banState(rule, chain)).toEqual({ ...freshBan(), readBack: false });
  });
});

describe("a chain over a superset of denials bans at least as long as exact counting (seeded)", () => {
  it(`for every policy and trace, at every denial (seed ${SEED})`, () => {
    let bans = 0;
    fc.assert(
      fc.property(
        fc.record({
          after: fc.integer({ min: 1, max: 4 }),
          withinMs: fc.integer({ min: 1, max: 2000 }),
          forMs: fc.integer({ min: 1, max: 5000 }),
        }),
        // Gaps between denials, and whether the exact store sees each one (the capped sees all).
        fc.array(fc.tuple(fc.integer({ min: 0, max: 1500 }), fc.boolean()), { minLength: 1, maxLength: 40 }),
        (p, steps) => {
          const exact = freshBan();
          const chain = readBack(0, -INF, -INF);
          let now = T;
          for (const [gap, seen] of steps) {
            now += gap;
            // A denial the exact store counts; during its own ban it takes none (decide-rule.ts).
            if (seen && !(exact.until > now) && countDenial(exact, p, now)) bans++;
            countDenial(chain, p, now);
            expect(chain.until, `at ${now - T}`).toBeGreaterThanOrEqual(exact.until);
          }
        },
      ),
      { numRuns: 2000, seed: SEED },
    );
    expect(bans).toBeGreaterThan(500);
  });
});

describe("rate-limiter-flexible's calls settle a read-back record that has gone fresh", () => {
  // A block on a read-back key whose record is fresh must end read-back mode first: otherwise
  // the checks refused during the block count as a chain and extend it past the block's end
  // (a ban the key's exact record never had). [call, the block's ms]: after 2 within 1000 for 5000.
  const spec = { algorithm: "fixed-window" as const, limit: 1, windowMs: 1000 };
  it.each(["block", "get", "penalty"] as const)("%s, then checks during a 2 s block", (call) => {
    const rule = compileRule([spec], policy);
    const record = createRecord(rule);
    // One strike at T, read back from a summary; fresh from T + 1000 (the strike's span).
    Object.assign(banState(rule, record) as BanState, readBack(1, T, -INF));
    const at = T + 5000;
    if (call !== "block") decideRule(rule, record, at, 1, call);
    // `penalty` took the window's unit: the block starts once that window is over.
    const start = call === "penalty" ? T + 6000 : at;
    decideRule(rule, record, start, 2000, "block");
    for (const t of [100, 200, 300, 400]) {
      expect(decideRule(rule, record, start + t, 1, "check").allowed, `check at +${t}`).toBe(false);
    }
    // The block ends at +2000 and nothing else holds the key.
    const after = decideRule(rule, record, start + 2000, 1, "check");
    expect(after.allowed).toBe(true);
    expect((banState(rule, record) as BanState).readBack).not.toBe(true);
  });
});
