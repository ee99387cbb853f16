// The fleet queue host (fleet-queue-host.ts) at fixed instants (ManualClock) on a MemoryStore:
// order across owners, hand-off by push, the host's own timer at the rate's due instant, a gone
// owner's slots, cancel, renew, and a silent owner's tickets.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../core/clock.ts";
import type { FleetGrant } from "../core/fleet-queue.ts";
import {
  type HeldGrant,
  type PausedKey,
  QUEUE_CHANNEL,
  type QueueCall,
  QueueHost,
  type QueueHostOptions,
  type QueuePush,
  type QueueRules,
  REJOIN_GRACE_MS,
} from "./fleet-queue-host.ts";
import { MemoryStore } from "./memory/memory-store.ts";

const T = 1_000_000;

function setup(rules: Partial<QueueRules>, store = new MemoryStore(), options: QueueHostOptions = {}, at = T) {
  const clock = new ManualClock(at);
  const pushed: Array<{ to: number; owner: string; ids: string[] }> = [];
  const grants: FleetGrant[] = [];
  const pauses: Array<{ to: number; owner: string; ms: number; until: number }> = [];
  /** `coolFree` pushes: a key's cool-down job ended, told to the owners whose late start it held. */
  const freed: Array<{ to: number; owner: string; key: string }> = [];
  const host = new QueueHost(
    store,
    (to, m: QueuePush) => {
      if (m.coolFree === true) {
        freed.push({ to, owner: m.owner, key: m.key });
        return;
      }
      if (m.pause !== undefined) {
        pauses.push({ to, owner: m.owner, ...m.pause });
        return;
      }
      pushed.push({ to, owner: m.owner, ids: m.grants.map((g) => g.id) });
      grants.push(...m.grants);
    },
    clock,
    options,
  );
  let seq = 1;
  const call = (from: number, owner: string, op: QueueCall["op"], args: (string | number)[] = [], key = "k") =>
    host.handle(from, { channel: QUEUE_CHANNEL, type: "queue", seq: seq++, owner, op, key, args });
  const open = (from: number, held?: HeldGrant[], paused?: PausedKey[]) =>
    host.handle(from, {
      ...(held === undefined ? {} : { held }),
      ...(paused === undefined ? {} : { paused }),
      channel: QUEUE_CHANNEL,
      type: "queue",
      seq: seq++,
      owner: "",
      op: "o",
      key: "",
      args: [],
      rules: { rate: null, concurrency: null, ownerTtlMs: 1000, ...rules },
    }).status;
  const ids = (grants: readonly FleetGrant[]) => grants.map((g) => g.id);
  return { clock, host, pushed, grants, pauses, freed, call, open, ids };
}

const slots = (limit: number) => ({
  concurrency: { id: "c", spec: { algorithm: "concurrency", limit, leaseMs: 5000 } as never },
});

describe("fleet queue host", () => {
  it("grants in priority then arrival order across owners; a grant for another owner is pushed to it", () => {
    const { call, open, ids, pushed } = setup(slots(1));
    const a = open(1);
    const b = open(2);
    expect(ids(call(1, a, "e", ["x", 5, 1, 0]).grants)).toEqual(["x"]); // the one slot
    expect(call(1, a, "e", ["a5", 5, 1, 0]).grants).toEqual([]);
    expect(call(2, b, "e", ["b5", 5, 1, 0, "b1", 1, 1, 0]).grants).toEqual([]);
    // x ends: the head is b1 (priority 1), B's: pushed to worker 2.
    expect(call(1, a, "r", ["x", 0]).grants).toEqual([]);
    expect(pushed).toEqual([{ to: 2, owner: b, ids: ["b1"] }]);
    // b1 ends: a5 arrived before b5: A's grant, pushed (B called).
    expect(call(2, b, "r", ["b1", 0]).grants).toEqual([]);
    expect(pushed[1]).toEqual({ to: 1, owner: a, ids: ["a5"] });
    expect(ids(call(1, a, "r", ["a5", 0]).grants)).toEqual([]);
    expect(pushed[2]).toEqual({ to: 2, owner: b, ids: ["b5"] });
  });

  it("a ticket sent again after a 429 (front) goes ahead of its priority's others", () => {
    const { call, open, pushed } = setup(slots(1));
    const a = open(1);
    const b = open(2);
    call(1, a, "e", ["x", 5, 1, 0]);
    call(2, b, "e", ["b5", 5, 1, 0]);
    call(1, a, "e", ["again", 5, 1, 1]);
    call(1, a, "r", ["x", 0]);
    expect(pushed).toEqual([]); // granted to the caller, A
    expect(call(1, a, "r", ["again", 0]).grants).toEqual([]);
    expect(pushed).toEqual([{ to: 2, owner: b, ids: ["b5"] }]);
  });

  it("a head that waits for the rate is granted by the host's timer at the due instant, to its owner", () => {
    const { clock, call, open, ids, pushed } = setup({
      rate: { id: "r", specs: [{ algorithm: "gcra", limit: 1, periodMs: 1000, burst: 1 } as never] },
    });
    const a = open(1);
    const first = call(1, a, "e", ["1", 5, 1, 0, "2", 5, 1, 0]).grants;
    expect(ids(first)).toEqual(["1"]);
    expect(first[0]).toEqual({ id: "1", leased: false, delayMs: 0, at: T });
    clock.advance(999);
    expect(pushed).toEqual([]);
    clock.advance(1);
    expect(pushed).toEqual([{ to: 1, owner: a, ids: ["2"] }]);
  });

  it("a ticket's penalty (the adaptive rate on a burst-1 rate) is spent at its grant: the next head waits the longer interval", () => {
    const { clock, call, open, ids, pushed } = setup({
      rate: { id: "r", specs: [{ algorithm: "gcra", limit: 1, periodMs: 1000, burst: 1 } as never] },
      ownerTtlMs: 10_000,
    });
    const a = open(1);
    // "1" costs 1 unit and 2 more as a penalty (as queue.lua reads "units+penalty").
    expect(ids(call(1, a, "e", ["1", 5, "1+2", 0, "2", 5, 1, 0]).grants)).toEqual(["1"]);
    clock.advance(1000); // without the penalty "2" was due here
    expect(pushed).toEqual([]);
    clock.advance(1999);
    expect(pushed).toEqual([]);
    clock.advance(1);
    expect(pushed).toEqual([{ to: 1, owner: a, ids: ["2"] }]);
  });

  it("a fleet pause (a 429): nothing of the key is granted until it ends; every other owner hears it at once", () => {
    const { clock, call, open, ids, pushed, pauses } = setup({ ...slots(2), ownerTtlMs: 10_000 });
    const a = open(1);
    const b = open(2);
    expect(ids(call(1, a, "e", ["1", 5, 1, 0]).grants)).toEqual(["1"]);
    // "h" with "pause": the status is the pause's end and whether the key was paused already.
    expect(call(1, a, "h", ["pause", 500]).status).toBe(`${T + 500},0`);
    expect(pauses).toEqual([{ to: 2, owner: b, ms: 500, until: T + 500 }]);
    // A free slot, but the key is paused: b's ticket waits for the pause's end.
    expect(ids(call(2, b, "e", ["2", 5, 1, 0]).grants)).toEqual([]);
    clock.advance(200);
    expect(call(2, b, "h", ["pause", 300]).status).toBe(`${T + 500},1`);
    expect(pauses[1]).toEqual({ to: 1, owner: a, ms: 300, until: T + 500 });
    clock.advance(299);
    expect(pushed).toEqual([]);
    clock.advance(1);
    expect(pushed).toEqual([{ to: 2, owner: b, ids: ["2"] }]);
  });

  it("with lookaheadMs, a head due within it is granted early, its units taken at the due instant and a delayMs until then", () => {
    const { clock, call, open, ids, grants } = setup({
      rate: { id: "r", specs: [{ algorithm: "gcra", limit: 1, periodMs: 1000, burst: 1 } as never] },
      lookaheadMs: 50,
      ownerTtlMs: 10_000, // no heartbeat here
    });
    const a = open(1);
    expect(ids(call(1, a, "e", ["1", 5, 1, 0, "2", 5, 1, 0, "3", 5, 1, 0]).grants)).toEqual(["1"]);
    clock.advance(949);
    expect(grants).toEqual([]);
    clock.advance(1); // 50 ms before "2" is due
    expect(grants).toEqual([{ id: "2", leased: false, delayMs: 50, at: T + 1000 }]);
    // "3" is due at T + 2000 (the rate record counts "2" at its due instant, not at the grant).
    clock.advance(999);
    expect(grants).toHaveLength(1);
    clock.advance(1);
    expect(grants[1]).toEqual({ id: "3", leased: false, delayMs: 50, at: T + 2000 });
  });

  it("an owner gone (its worker exited) loses its tickets and gives its slots back at once", () => {
    const { call, open, host, pushed } = setup(slots(1));
    const a = open(1);
    const b = open(2);
    call(1, a, "e", ["x", 5, 1, 0, "y", 0, 1, 0]);
    call(2, b, "e", ["b", 5, 1, 0]);
    host.disconnect(1);
    expect(pushed).toEqual([{ to: 2, owner: b, ids: ["b"] }]);
    expect(call(1, a, "h").error).toMatch(/unknown fleet queue owner/);
  });

  it("cancel: a waiting ticket is removed (1), a granted one given back (2) and its slot granted on, else 0", () => {
    const { call, open, pushed } = setup(slots(1));
    const a = open(1);
    const b = open(2);
    call(1, a, "e", ["x", 5, 1, 0, "w", 5, 1, 0]);
    call(2, b, "e", ["b", 5, 1, 0]);
    expect(call(1, a, "c", ["w"]).status).toBe("1");
    expect(call(1, a, "c", ["x"]).status).toBe("2");
    expect(pushed).toEqual([{ to: 2, owner: b, ids: ["b"] }]);
    expect(call(1, a, "c", ["x"]).status).toBe("0");
  });

  it("renew holds a lease past its expiry; an expired lease is no longer held", () => {
    const { clock, call, open } = setup(slots(1));
    const a = open(1);
    call(1, a, "e", ["x", 5, 1, 0, "y", 5, 1, 0]);
    clock.advance(4000);
    expect(call(1, a, "n", ["x"]).status).toBe("1");
    clock.advance(4000); // 8 s after the grant, 4 s after the renewal: still held
    expect(call(1, a, "e", []).grants).toEqual([]);
    clock.advance(1001); // the renewed lease expired: the timer grants y
    expect(call(1, a, "n", ["x"]).status).toBe("0");
  });

  it("a silent owner's tickets leave when they reach the head; its next heartbeat says it was forgotten", () => {
    const { clock, call, open, pushed } = setup(slots(1));
    const a = open(1);
    const b = open(2);
    call(2, b, "e", ["b", 5, 1, 0]);
    call(1, a, "e", ["a", 5, 1, 0]);
    clock.advance(1001); // A's heartbeat deadline (ownerTtlMs 1000) passed
    expect(call(2, b, "r", ["b", 0]).grants).toEqual([]);
    expect(pushed).toEqual([]);
    expect(call(1, a, "h").status).toBe("0");
    expect(call(1, a, "h").status).toBe("1");
  });

  it("a new host (empty records): a rejoining owner's running grant takes its slot, and nothing is granted during the grace", () => {
    const { call, open, ids, pushed, clock } = setup(slots(2));
    const a = open(1, [["k", "x", 1, 1, null]]); // A ran x at the lost host
    const b = open(2);
    expect(call(2, b, "e", ["b1", 0, 1, 0, "b2", 0, 1, 0]).grants).toEqual([]); // the grace
    clock.advance(REJOIN_GRACE_MS - 1);
    expect(pushed).toEqual([]);
    clock.advance(1); // the grace ends: one slot is x's, so one of B's
    expect(pushed).toEqual([{ to: 2, owner: b, ids: ["b1"] }]);
    expect(ids(call(1, a, "r", ["x", 0]).grants)).toEqual([]); // x ends: its slot goes to b2
    expect(pushed[1]).toEqual({ to: 2, owner: b, ids: ["b2"] });
  });

  it("a new host (empty records): a rejoining owner's rate units count again, at the takeover instant", () => {
    const { call, open, pushed, clock } = setup({
      rate: { id: "r", specs: [{ algorithm: "fixed-window", limit: 2, windowMs: 10_000 } as never] },
    });
    open(1, [
      ["k", "x", 0, 1, T - 5000],
      ["k", "y", 0, 1, T - 4000],
    ]);
    const b = open(2);
    expect(call(2, b, "e", ["b1", 0, 1, 0]).grants).toEqual([]);
    clock.advance(REJOIN_GRACE_MS);
    expect(pushed).toEqual([]); // the window holds x and y
  });

  it("a new host on shared records: the rejoining owner brings its lease's receipt; nothing is forced or held back", () => {
    const store = new MemoryStore();
    const old = setup(slots(1), store);
    const a0 = old.open(1);
    expect(old.ids(old.call(1, a0, "e", ["x", 0, 1, 0]).grants)).toEqual(["x"]);
    const renewed = old.host.handle(1, {
      channel: QUEUE_CHANNEL,
      type: "queue",
      seq: 99,
      owner: a0,
      op: "n",
      key: "k",
      args: ["x"],
    });
    expect(renewed.leaseAt).toBe(T);
    // The old host is gone; the new one decides on the same records.
    const { call, open, pushed } = setup(slots(1), store, { sharedRecords: true });
    const a = open(1, [["k", "x", 1, 1, null, T]]);
    const b = open(2);
    expect(call(2, b, "e", ["b1", 0, 1, 0]).grants).toEqual([]); // x's lease is in the records
    expect(call(1, a, "r", ["x", 0]).grants).toEqual([]); // released by its receipt: b1 now, no grace
    expect(pushed).toEqual([{ to: 2, owner: b, ids: ["b1"] }]);
  });

  it("a new host (empty records): a key nobody reports is seeded full at the takeover (the lost host's own jobs' units), for one rate period", () => {
    const { call, open, ids, pushed, clock } = setup({
      rate: { id: "r", specs: [{ algorithm: "sliding-log", limit: 3, windowMs: 10_000 } as never] },
      ownerTtlMs: 60_000,
    });
    const a = open(1, []); // a rejoin: A held nothing (the lost host's own process ran "j"'s jobs)
    clock.advance(REJOIN_GRACE_MS);
    // Without the seed the host would grant a fresh window of 3 on "j" at once.
    expect(call(1, a, "e", ["1", 0, 1, 0], "j").grants).toEqual([]);
    clock.advance(10_000 - REJOIN_GRACE_MS - 1);
    expect(pushed).toEqual([]);
    clock.advance(1); // a rate period after the takeover: the seed's units leave the window
    expect(pushed).toEqual([{ to: 1, owner: a, ids: ["1"] }]);
    // Once the period is over, a key first touched now is not seeded.
    expect(ids(call(1, a, "e", ["2", 0, 1, 0], "fresh").grants)).toEqual(["2"]);
  });

  it("a new host: a fleet pause the lost host made holds again, from what a rejoining owner reports of it", () => {
    const { call, open, pushed, clock } = setup({ ...slots(2), ownerTtlMs: 10_000 });
    const a = open(1, [], [["k", 3000]]);
    const b = open(2, []);
    clock.advance(REJOIN_GRACE_MS);
    expect(call(2, b, "e", ["b1", 0, 1, 0]).grants).toEqual([]); // free slots, but paused
    clock.advance(3000 - REJOIN_GRACE_MS - 1);
    expect(pushed).toEqual([]);
    clock.advance(1);
    expect(pushed).toEqual([{ to: 2, owner: b, ids: ["b1"] }]);
    expect(a).not.toBe(b);
  });

  it("a new host on shared records: a fleet pause the lost host made holds again there too", () => {
    const { call, open, pushed, clock } = setup(slots(1), new MemoryStore(), { sharedRecords: true });
    open(1, [], [["k", 500]]);
    const b = open(2, []);
    expect(call(2, b, "e", ["b1", 0, 1, 0]).grants).toEqual([]);
    clock.advance(500);
    expect(pushed).toEqual([{ to: 2, owner: b, ids: ["b1"] }]);
  });

  it("a new host (empty records) with a lookahead: the seed covers the lost host's grants ahead too (its units taken up to lookaheadMs past the takeover)", () => {
    const { call, open, clock } = setup({
      rate: { id: "r", specs: [{ algorithm: "gcra", limit: 10, periodMs: 1000, burst: 1 } as never] },
      lookaheadMs: 2000,
      ownerTtlMs: 60_000,
    });
    const a = open(1, []);
    clock.advance(REJOIN_GRACE_MS);
    // The lost host may have granted a start as late as T + 2000 (its lookahead): a seed at the
    // takeover alone would let this start at once (T + 1000), one spacing from it is T + 2100.
    const [grant] = call(1, a, "e", ["1", 0, 1, 0], "j").grants;
    expect(grant?.at).toBeGreaterThanOrEqual(T + 2000);
  });
});

describe("fleet queue host: memory", () => {
  it("a rate-only grant is not kept (nobody releases it): a key whose tickets were all granted is dropped", () => {
    const { call, open, host } = setup({
      rate: { id: "r", specs: [{ algorithm: "gcra", limit: 100, periodMs: 1000 } as never] },
      ownerTtlMs: 10_000,
    });
    const a = open(1);
    for (let k = 0; k < 50; k++) expect(call(1, a, "e", ["1", 5, 1, 0, "2", 5, 1, 0], `k${k}`).grants).toHaveLength(2);
    expect(host.keyCount()).toBe(0);
  });
});

// After a pause the key cools down (coolDownEnd, src/core/fleet-queue.ts): as long as the pause,
// one job at a time. Without it the rate, refilled during the pause, granted every waiting ticket
// at its end (a burst-allowing rate above the upstream's: a 429 for each one past its limit).
describe("fleet queue host: the cool-down after a pause", () => {
  const burst = {
    rate: { id: "r", specs: [{ algorithm: "gcra", limit: 100, periodMs: 1000 } as never] },
    ownerTtlMs: 10_000,
  };

  it("one job at a time for as long as the pause lasted, each granted when the one before is released; then the rate alone", () => {
    const { clock, call, open, grants } = setup(burst);
    const a = open(1);
    const b = open(2);
    expect(call(1, a, "h", ["pause", 500]).status).toBe(`${T + 500},0`);
    expect(call(1, a, "e", ["1", 5, 1, 0, "2", 5, 1, 0]).grants).toEqual([]);
    expect(call(2, b, "e", ["3", 5, 1, 0, "4", 5, 1, 0]).grants).toEqual([]);
    clock.advance(500); // the pause ends: the host's timer grants the head alone
    expect(grants).toEqual([{ id: "1", leased: false, delayMs: 0, at: T + 500, cooling: true }]);
    clock.advance(100);
    expect(grants).toHaveLength(1);
    // "1" ends: its release grants the next ("2", the caller's own), and only it.
    const next = call(1, a, "r", ["1", 0]).grants;
    expect(next).toEqual([{ id: "2", leased: false, delayMs: 0, at: T + 600, cooling: true }]);
    expect(grants).toHaveLength(1);
    expect(call(1, a, "r", ["2", 0]).grants).toEqual([]);
    // Its unit's slot is 9 ms on: "2"'s unit (taken at T + 600, 10 ms each) is still ahead of it.
    expect(grants.slice(1)).toEqual([{ id: "3", leased: false, delayMs: 0, at: T + 600, cooling: true, slackMs: 9 }]);
    // "3" still runs when the cool-down ends (T + 1000): "4" goes then, granted as before the pause.
    clock.advance(399);
    expect(grants).toHaveLength(2);
    clock.advance(1);
    // Its slot is 989 ms on: the cool-down's end charged the refilled burst ahead of it.
    expect(grants.slice(2)).toEqual([{ id: "4", leased: false, delayMs: 0, at: T + 1000, slackMs: 989 }]);
  });

  it("the burst the rate refilled during the pause and the cool-down does not survive them: the rate resumes at its steady pace", () => {
    // gcra 5/s (burst 5): a short pause (200 ms, an X-RateLimit-Reset's rest of a window) and as
    // long a cool-down whose one job still runs at its end. Before, the 4 units left went at once
    // at T + 400 (several jobs into the upstream's next window: F1 of the attack).
    const { clock, call, open, ids, grants } = setup({
      rate: { id: "r", specs: [{ algorithm: "gcra", limit: 5, periodMs: 1000 } as never] },
      ownerTtlMs: 10_000,
    });
    const a = open(1);
    call(1, a, "h", ["pause", 200]);
    expect(call(1, a, "e", ["1", 5, 1, 0, "2", 5, 1, 0, "3", 5, 1, 0, "4", 5, 1, 0, "5", 5, 1, 0]).grants).toEqual([]);
    clock.advance(200);
    expect(ids(grants)).toEqual(["1"]);
    clock.advance(200); // the cool-down ends: one start, then one per 200 ms
    expect(ids(grants)).toEqual(["1", "2"]);
    clock.advance(199);
    expect(ids(grants)).toEqual(["1", "2"]);
    clock.advance(1);
    expect(ids(grants)).toEqual(["1", "2", "3"]);
  });

  it("a later pause extends the cool-down; a gone owner's cool-down job frees its place at once", () => {
    const { clock, call, open, ids, grants, host } = setup(burst);
    const a = open(1);
    const b = open(2);
    call(1, a, "h", ["pause", 300]);
    clock.advance(200);
    call(1, a, "h", ["pause", 400]); // ends at T + 600, cools down until T + 1000
    expect(call(1, a, "e", ["1", 5, 1, 0]).grants).toEqual([]);
    expect(call(2, b, "e", ["2", 5, 1, 0, "3", 5, 1, 0]).grants).toEqual([]);
    clock.advance(400);
    expect(ids(grants)).toEqual(["1"]);
    host.disconnect(1); // a's worker exited with its job
    expect(ids(grants)).toEqual(["1", "2"]);
    clock.advance(399);
    expect(ids(grants)).toEqual(["1", "2"]);
    clock.advance(1);
    expect(ids(grants)).toEqual(["1", "2", "3"]);
  });

  it("a new host: a cool-down the lost host was running holds again, from what a rejoining owner reports (its pause over)", () => {
    const { clock, call, open, grants } = setup(burst, new MemoryStore(), { sharedRecords: true });
    const a = open(1, [], [["k", 0, 400]]);
    expect(call(1, a, "e", ["1", 5, 1, 0, "2", 5, 1, 0]).grants.map((g) => [g.id, g.cooling])).toEqual([["1", true]]);
    clock.advance(400);
    expect(grants.map((g) => [g.id, g.cooling])).toEqual([["2", undefined]]);
  });

  it("a new host: the cool-down's running job a rejoining owner reports holds the cool-down there until it is released", () => {
    // Before, the new host heard the cool-down but not its job: b's ticket went at the grace's end,
    // a second job running during the cool-down.
    const { clock, call, open, ids, grants } = setup(burst);
    const a = open(1, [], [["k", 0, 3000, "7"]]);
    const b = open(2, []);
    clock.advance(REJOIN_GRACE_MS);
    expect(call(2, b, "e", ["b1", 5, 1, 0]).grants).toEqual([]);
    clock.advance(500);
    expect(ids(grants)).toEqual([]);
    expect(call(1, a, "r", ["7", 0]).status).toBe("1"); // a's job ends: b1 is the cool-down's job now
    expect(grants.map((g) => [g.id, g.cooling])).toEqual([["b1", true]]);
  });

  it("a late start (restamp) is a start: refused while another cool-down job runs, then it is that job", () => {
    const { clock, call, open, grants, freed } = setup(burst);
    const a = open(1);
    const b = open(2);
    // "1" was granted before the pause; its task starts late, during the cool-down.
    expect(call(1, a, "e", ["1", 5, 1, 0]).grants).toHaveLength(1);
    call(1, a, "h", ["pause", 500]);
    call(2, b, "e", ["2", 5, 1, 0]);
    clock.advance(500);
    expect(grants.map((g) => [g.id, g.cooling])).toEqual([["2", true]]);
    // "2" runs: "1" waits, its units given back: told when "2" ends (a push, `coolFree`), so its
    // fallback wait is the cool-down's rest up to COOL_FALLBACK_MS (it was 50 ms: a poll).
    expect(call(1, a, "h", ["restamp", "1", 1, T]).status).toBe("0,500");
    expect(freed).toEqual([]);
    expect(call(2, b, "r", ["2", 0]).status).toBe("1");
    expect(freed).toEqual([{ to: 1, owner: a, key: "k" }]);
    expect(call(1, a, "h", ["restamp", "1", 1, "-"]).status).toBe(`1,${T + 500},0,c,9`);
    // Now "1" holds the cool-down: a new ticket waits for its release.
    expect(call(2, b, "e", ["3", 5, 1, 0]).grants).toEqual([]);
    expect(call(1, a, "r", ["1", 0]).grants).toEqual([]);
    expect(grants.map((g) => [g.id, g.cooling])).toEqual([
      ["2", true],
      ["3", true],
    ]);
  });
});
