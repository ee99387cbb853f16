// Which operations make a store that copies records (shared memory, Redis, a cluster's primary)
// write the record back: `changesStoredRecord`, as a full table of operation × outcome × rule
// with and without a ban. Every cell is also checked against the record itself: whenever the
// table says "nothing changed", decideRule left the record as it was. Found open by the mutation
// run of decide-rule.ts (docs/testing.md: 16 survivors on its line, no test of the default list
// observed it).
import { describe, expect, it } from "vitest";
import { decision } from "../algorithms/decision.ts";
import type { AlgorithmSpec } from "../algorithms/specs.ts";
import type { BanPolicy } from "./ban.ts";
import { changesStoredRecord, decideRule, type Operation, storesNewRecord } from "./decide-rule.ts";
import { type CompiledRule, compileRule, createRecord } from "./rule.ts";
import { validateSpec } from "./spec.ts";

const rule = (specs: unknown[], ban?: BanPolicy): CompiledRule =>
  compileRule(
    specs.map((s) => validateSpec(s) as AlgorithmSpec),
    ban,
  );
const BAN: BanPolicy = { after: 2, withinMs: 1000, forMs: 5000 };
const FW = rule([{ algorithm: "fixed-window", limit: 3, windowMs: 1000 }]);
const FW_BAN = rule([{ algorithm: "fixed-window", limit: 3, windowMs: 1000 }], BAN);
const ALLOWED = decision(true, 3, 2, 0, 1000);
const DENIED = decision(false, 3, 0, 1000, 1000);

const OPS: Operation[] = ["check", "peek", "refund", "penalty", "block", "get", "release", "renew"];

/** The table: [op, allowed, with a ban] → whether the record must be written back. */
function expected(op: Operation, allowed: boolean, ban: boolean): boolean {
  switch (op) {
    case "check":
      return allowed || ban; // a denial counts toward a ban
    case "refund":
    case "release":
    case "penalty":
    case "block":
      return true;
    case "renew":
      return allowed; // a denied renewal moved nothing
    default:
      return false; // peek, get
  }
}

describe("changesStoredRecord: which operations write the record back", () => {
  for (const op of OPS) {
    for (const allowed of [true, false]) {
      for (const ban of [false, true]) {
        it(`${op}, ${allowed ? "allowed" : "denied"}, ${ban ? "with" : "without"} a ban`, () => {
          const r = ban ? FW_BAN : FW;
          const result = allowed ? ALLOWED : DENIED;
          expect(changesStoredRecord(r, op, result)).toBe(expected(op, allowed, ban));
          // A new record is stored only for what changes a fresh one: never a refund, release
          // or renewal (a fresh key holds nothing to give back or move).
          const fresh = (op === "check" && (allowed || ban)) || op === "penalty" || op === "block";
          expect(storesNewRecord(r, op, result)).toBe(fresh);
        });
      }
    }
  }

  it("the table agrees with the record: an operation it calls read-only leaves the record alone", () => {
    const T = Date.UTC(2026, 11, 1);
    for (const r of [FW, FW_BAN]) {
      for (const op of ["peek", "get"] as const) {
        const record = createRecord(r);
        decideRule(r, record, T, 1, "check");
        const before = structuredClone(record);
        const d = decideRule(r, record, T, 1, op);
        expect(changesStoredRecord(r, op, d)).toBe(false);
        expect(record).toEqual(before);
      }
      // A denied check on a rule with a ban counts a strike: the record changed, and the table says so.
      const record = createRecord(r);
      for (let i = 0; i < 3; i++) decideRule(r, record, T, 1, "check");
      const before = structuredClone(record);
      const d = decideRule(r, record, T, 1, "check");
      expect(d.allowed).toBe(false);
      expect(changesStoredRecord(r, "check", d)).toBe(r === FW_BAN);
      if (r === FW_BAN) expect(record).not.toEqual(before);
      else expect(record).toEqual(before);
    }
  });
});
