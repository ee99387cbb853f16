// The host side of lease re-registration (issue 33): a new host logs each re-registered lease
// at its receipt (so the holder's release and renewal name it), and while it settles refuses new
// leases, never rate checks.
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../memory/memory-store.ts";
import { createDispatcher } from "./dispatcher.ts";
import { type BatchMessage, type BindRecord, CHANNEL, decode, type Op, type WireDecision } from "./protocol.ts";

const T = Date.UTC(2026, 11, 1);
const leases: BindRecord = {
  binding: 1,
  id: "inflight",
  specs: [{ algorithm: "concurrency", limit: 2, leaseMs: 1000 }],
  ban: null,
  clock: false,
};
const rate: BindRecord = {
  binding: 2,
  id: "rate",
  specs: [{ algorithm: "fixed-window", limit: 5, windowMs: 1000 }],
  ban: null,
  clock: false,
};
let seq = 1;
const batch = (ops: Op[], extra: Partial<BatchMessage> = {}): BatchMessage => ({
  channel: CHANNEL,
  type: "batch",
  seq: seq++,
  binds: [],
  releases: [],
  ops,
  ...extra,
});
const answers = (reply: { results: readonly unknown[] } | undefined) =>
  (reply?.results ?? []).map((r) => {
    const d = decode(r as WireDecision);
    return [d.allowed, d.remaining];
  });

describe("dispatcher: leases re-registered at a new host", () => {
  it("logs them at their receipts: they count, and release / renew by those receipts", () => {
    const d = createDispatcher(new MemoryStore());
    d.handle(1, batch([], { seq: 0, binds: [leases], leases: [[1, "k", T, 1]] }));
    d.handle(2, batch([], { seq: 0, binds: [leases], leases: [[1, "k", T + 10, 1]] }));
    // Both slots are taken: a new lease is refused.
    expect(answers(d.handle(3, batch([[1, "k", 1, T + 20, "check"]], { binds: [leases] })))).toEqual([[false, 0]]);
    // Client 1 renews its lease of T; client 2 releases its lease of T + 10: one slot frees. (A
    // release answers what a peek of one then says: 0 left with one lease held, 1 with none.)
    expect(answers(d.handle(1, batch([[1, "k", 1, T + 30, "renew", T]])))).toEqual([[true, 0]]);
    expect(answers(d.handle(2, batch([[1, "k", 1, T + 40, "release", T + 10]])))).toEqual([[true, 0]]);
    // The old receipt of the renewed lease names nothing now; its new one frees the last slot.
    expect(answers(d.handle(1, batch([[1, "k", 1, T + 50, "release", T]])))).toEqual([[true, 0]]);
    expect(answers(d.handle(1, batch([[1, "k", 1, T + 60, "release", T + 30]])))).toEqual([[true, 1]]);
  });

  it("while the gate holds, refuses new leases with its time left, and answers rate checks", () => {
    let left = 700;
    const d = createDispatcher(new MemoryStore(), (leaseMs) => (leaseMs === 1000 ? left : 0));
    const reply = d.handle(1, batch([[1, "k", 1, T, "check"]], { binds: [leases, rate] }));
    const refused = decode(reply?.results[0] as WireDecision);
    expect([refused.allowed, refused.remaining, refused.retryAfterMs]).toEqual([false, 0, 700]);
    expect(answers(d.handle(1, batch([[2, "k", 1, T, "check"]])))).toEqual([[true, 4]]);
    left = 0;
    expect(answers(d.handle(1, batch([[1, "k", 1, T, "check"]])))).toEqual([[true, 1]]);
  });
});
