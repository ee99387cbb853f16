// decideRule's non-bare paths at fixed instants (composites and rules with a ban), calling it
// directly on records: what a peek, a refund and a composite denial leave in the record, the
// penalty/block refusals, the ban's end instant for rate-limiter-flexible's calls, and which
// results a store must keep for a key it had no record of. Found open by the mutation run
// (docs/testing.md, "Mutation testing").
import { describe, expect, it } from "vitest";
import type { Algorithm } from "../algorithms/algorithm.ts";
import { decision } from "../algorithms/decision.ts";
import type { AlgorithmSpec } from "../algorithms/specs.ts";
import type { BanPolicy } from "./ban.ts";
import { decideRule, isFreshAnswer, storesNewRecord } from "./decide-rule.ts";
import { ArgumentError } from "./errors.ts";
import { type CompiledRule, compileRule, createRecord } from "./rule.ts";
import { validateSpec } from "./spec.ts";

const T = Date.UTC(2026, 11, 1); // a multiple of every window below
const rule = (specs: unknown[], ban?: BanPolicy): CompiledRule =>
  compileRule(
    specs.map((s) => validateSpec(s) as AlgorithmSpec),
    ban,
  );
const BAN: BanPolicy = { after: 2, withinMs: 1000, forMs: 5000 };
const FW = { algorithm: "fixed-window", limit: 3, windowMs: 1000 };
const LOG = { algorithm: "sliding-log", limit: 5, windowMs: 1000 };
const COMPOSITE = rule([FW, LOG]);
const BANNED_FW = rule([FW], BAN);

describe("decideRule: what non-bare operations leave in the record", () => {
  it.each([
    ["a composite", COMPOSITE],
    ["a rule with a ban", BANNED_FW],
  ])("a peek of %s takes nothing, however often", (_, r) => {
    const record = createRecord(r);
    const before = structuredClone(record);
    for (let i = 0; i < 4; i++)
      expect(decideRule(r, record, T, 1, "peek")).toMatchObject({ allowed: true, remaining: 2 });
    expect(record).toEqual(before);
  });

  it.each([
    ["a composite", COMPOSITE],
    ["a rule with a ban", BANNED_FW],
  ])("a refund of %s gives back and answers a peek: it takes no unit itself", (_, r) => {
    const record = createRecord(r);
    expect(decideRule(r, record, T, 2, "check")).toMatchObject({ allowed: true, remaining: 1 });
    expect(decideRule(r, record, T + 10, 2, "refund")).toMatchObject({ allowed: true, remaining: 2 });
    // All 3 fit again: the refund took nothing for its answer.
    expect(decideRule(r, record, T + 20, 3, "check")).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("a composite denied by one member leaves the other's record as it was (a first-anchored window is not opened)", () => {
    const r = rule([
      { algorithm: "fixed-window", limit: 5, windowMs: 1000, anchor: "first" },
      { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
    ]);
    const record = createRecord(r) as [{ w: number; c: number }, { w: number; c: number }];
    record[1] = { w: T, c: 1 };
    const before = structuredClone(record);
    const d = decideRule(r, record, T + 100, 1, "check");
    expect(d.allowed).toBe(false);
    expect(record).toEqual(before);
    // The first member's window opens at the first counted request, 400 ms later: it resets 1000 ms on.
    const next = decideRule(r, record, T + 1500, 1, "check");
    expect(next.allowed).toBe(true);
    expect(next.parts?.[0]).toMatchObject({ remaining: 4, resetMs: 1000 });
  });
});

describe("decideRule: rate-limiter-flexible's calls", () => {
  it("penalty on a member without `force` is refused with an ArgumentError naming the algorithm", () => {
    const base = rule([FW]);
    const { force: _, ...noForce } = base.members[0] as Algorithm;
    const r: CompiledRule = { ...base, members: [noForce as Algorithm] };
    expect(() => decideRule(r, createRecord(r), T, 1, "penalty")).toThrow(
      new ArgumentError("penalty is not supported by fixed-window"),
    );
  });

  it("block on a rule without a ban slot is refused (its store keeps the block beside the record)", () => {
    const r = rule([FW]);
    expect(() => decideRule(r, createRecord(r), T, 1000, "block")).toThrow(
      new ArgumentError("decideRule: a block without a ban slot is kept by the store"),
    );
  });

  it("a ban ends at its instant: get, penalty and block there decide on the members alone", () => {
    const ended = () => {
      const record = createRecord(BANNED_FW) as [{ w: number; c: number }, { since: number; n: number; until: number }];
      record[1] = { since: T - 1000, n: 2, until: T };
      return record;
    };
    expect(decideRule(BANNED_FW, ended(), T, 1, "get")).toMatchObject({ allowed: true, remaining: 2 });
    expect(decideRule(BANNED_FW, ended(), T, 1, "get").banned).toBeUndefined();
    expect(decideRule(BANNED_FW, ended(), T, 1, "penalty")).toMatchObject({ allowed: true, remaining: 1 });
    // A block of 0 ms ends the moment it starts.
    const blocked = decideRule(BANNED_FW, ended(), T, 0, "block");
    expect(blocked).toMatchObject({ allowed: true, remaining: 2 });
    expect(blocked.banned).toBeUndefined();
    expect(decideRule(BANNED_FW, ended(), T - 1, 1, "get")).toMatchObject({
      allowed: false,
      banned: true,
      retryAfterMs: 1,
    });
  });

  it("only `get` marks an answer from a record equivalent to a fresh key's", () => {
    const r = rule([FW], BAN);
    expect(isFreshAnswer(decideRule(r, createRecord(r), T, 1, "get"))).toBe(true);
    expect(isFreshAnswer(decideRule(r, createRecord(r), T, 0, "penalty"))).toBe(false);
    expect(isFreshAnswer(decideRule(r, createRecord(r), T, 0, "block"))).toBe(false);
  });
});

describe("storesNewRecord: a key with no record is stored only when the operation changed it", () => {
  const allowed = decision(true, 3, 2, 0, 1000);
  const denied = decision(false, 3, 0, 1000, 1000);
  it.each([
    ["an allowed check", rule([FW]), "check", allowed, true],
    ["a denied check without a ban (nothing counted)", rule([FW]), "check", denied, false],
    ["a denied check with a ban (the denial counts)", BANNED_FW, "check", denied, true],
    ["a denied check of a composite", COMPOSITE, "check", denied, false],
    ["a peek", BANNED_FW, "peek", allowed, false],
    ["a refund", BANNED_FW, "refund", allowed, false],
    ["a get", BANNED_FW, "get", allowed, false],
    ["a penalty", rule([FW]), "penalty", denied, true],
    ["a block", BANNED_FW, "block", denied, true],
  ] as const)("%s", (_, r, op, d, stored) => {
    expect(storesNewRecord(r, op, d)).toBe(stored);
  });
});
