// The leases a ClusterStore process re-registers with a new socket host (issue 33): what a
// release, a renewal, a reset and expiry leave in the ledger, and how a peer's re-registration
// frame is validated.
import { describe, expect, it } from "vitest";
import { LeaseLedger } from "./lease-ledger.ts";
import { CHANNEL, type LeaseRecord } from "./protocol.ts";
import { invalidBatch } from "./validate.ts";

const T = Date.UTC(2026, 11, 1);

describe("LeaseLedger", () => {
  it("exists only for rules with a concurrency member, lasting their longest leaseMs", () => {
    expect(LeaseLedger.of([{ algorithm: "gcra", limit: 5, periodMs: 1000 }])).toBeUndefined();
    const ledger = LeaseLedger.of([
      { algorithm: "concurrency", limit: 2, leaseMs: 500 },
      { algorithm: "gcra", limit: 5, periodMs: 1000 },
      { algorithm: "concurrency", limit: 9, leaseMs: 900 },
    ]);
    expect(ledger?.leaseMs).toBe(900);
  });

  it("keeps what is held: releases drop their receipt's count, renewals move, resets forget, expired leases go", () => {
    const ledger = new LeaseLedger(1000);
    ledger.add("a", T, 1);
    ledger.add("a", T, 2); // three leases of one instant
    ledger.add("b", T + 10, 1);
    ledger.drop("a", T, 1);
    ledger.drop("a", T + 5, 1); // names no lease: nothing
    ledger.drop("b", T + 10, 1); // renewed: moved to T + 400
    ledger.add("b", T + 400, 1);
    ledger.add("c", T + 500, 1);
    ledger.forget("c");
    const out: LeaseRecord[] = [];
    ledger.collect(7, out, T + 900);
    expect(out).toEqual([
      [7, "a", T, 2],
      [7, "b", T + 400, 1],
    ]);
    expect(ledger.size).toBe(3);
    // At T + 1000 the leases of T expired (a lease lasts leaseMs from its receipt): not sent.
    const later: LeaseRecord[] = [];
    ledger.collect(7, later, T + 1000);
    expect(later).toEqual([[7, "b", T + 400, 1]]);
  });
});

describe("invalidBatch: re-registered leases", () => {
  const frame = (extra: object) => ({ channel: CHANNEL, type: "batch", seq: 0, ops: [], ...extra });
  it("accepts leases and a peer token", () => {
    expect(invalidBatch(frame({ leases: [[1, "k", T, 2]], resync: "abc" }))).toBeUndefined();
  });
  it.each([
    [{ leases: {} }, "`leases` is not an array"],
    [{ leases: [[1, "k", T]] }, "leases[0]: not a [binding, key, receipt, cost] tuple"],
    [{ leases: [[-1, "k", T, 1]] }, "leases[0]: the binding is not a binding number"],
    [{ leases: [[1, 5, T, 1]] }, "leases[0]: the key is not a string"],
    [{ leases: [[1, "k", null, 1]] }, "leases[0]: the receipt is not a finite instant"],
    [{ leases: [[1, "k", T, 0]] }, "leases[0]: the cost is not a safe integer ≥ 1"],
    [{ resync: "" }, "`resync` is not a peer token"],
    [{ resync: "x".repeat(65) }, "`resync` is not a peer token"],
  ])("refuses %j", (extra, why) => {
    expect(invalidBatch(frame(extra))).toContain(why);
  });
});
