// An owner's end of a hosted fleet queue (fleet-queue-client.ts) whose host is lost and replaced
// (ClusterStore's socket host re-elected, SharedMemoryStore's hosting thread gone): what the
// owners heard of the lost host's fleet pauses is restored at the new one.
import { describe, expect, it } from "vitest";
import { StoreError } from "../core/errors.ts";
import type { FleetGrant, FleetQueue, FleetQueueConfig } from "../core/fleet-queue.ts";
import { invalidQueueCall } from "./cluster/validate.ts";
import { openHostedFleetQueue, type QueueTransport } from "./fleet-queue-client.ts";
import { type QueueCall, QueueHost, type QueueHostOptions } from "./fleet-queue-host.ts";
import { MemoryStore } from "./memory/memory-store.ts";

/** Owners reaching one in-process host, which `replace` swaps for a new one (on new records or not). */
function hostedFleet(options: QueueHostOptions = {}) {
  const ears = new Map<number, { hear: (m: unknown) => void; lost: () => void }>();
  let store = new MemoryStore();
  const make = () => new QueueHost(store, (worker, push) => queueMicrotask(() => ears.get(worker)?.hear(push)));
  let host = make();
  let seq = 1;
  const calls: QueueCall[] = [];
  /** Why calls were refused: every call is checked as a ClusterStore socket host checks a peer's frames. */
  const refused: string[] = [];
  const transport = (worker: number): QueueTransport => ({
    peer: "the test host",
    rejoins: true,
    sequence: () => seq++,
    send(call, failed) {
      calls.push(call);
      const why = invalidQueueCall(call);
      if (why !== undefined) {
        refused.push(why);
        failed(new StoreError(why));
        return;
      }
      const reply = host.handle(worker, call);
      queueMicrotask(() => ears.get(worker)?.hear(reply));
    },
    listen(hear, lost) {
      ears.set(worker, { hear, lost });
      return () => ears.delete(worker);
    },
  });
  const open = async (
    worker: number,
    ownerTtlMs = 50,
    granted: (key: string, grants: readonly FleetGrant[]) => void = () => {},
  ): Promise<{ queue: FleetQueue; relinked: Promise<void> }> => {
    let relink: () => void = () => {};
    const relinked = new Promise<void>((done) => {
      relink = done;
    });
    const config: FleetQueueConfig = {
      rate: undefined,
      concurrency: { id: "c", spec: { algorithm: "concurrency", limit: 2, leaseMs: 5000 } },
      ownerTtlMs,
      listener: { granted, wake: () => {}, relinked: () => relink() },
    };
    return { queue: await openHostedFleetQueue(transport(worker), config, 1000), relinked };
  };
  const replace = () => {
    host.stop();
    if (options.sharedRecords !== true) store = new MemoryStore();
    host = make();
    for (const ear of [...ears.values()]) ear.lost();
  };
  return { open, replace, calls, refused };
}

describe("hosted fleet queue: a lost host's fleet pause", () => {
  it.each([
    ["a new host on empty records (ClusterStore's socket host)", {}],
    ["a new host on shared records (SharedMemoryStore)", { sharedRecords: true }],
  ])("%s: every owner reports the pause it heard, and the key stays paused there", async (_name, options) => {
    const fleet = hostedFleet(options);
    const a = await fleet.open(1);
    const b = await fleet.open(2);
    expect(await a.queue.pause?.("k", 60_000)).toMatchObject({ already: false });
    await new Promise((done) => setTimeout(done, 0)); // b hears the push
    fleet.replace();
    await Promise.all([a.relinked, b.relinked]);
    const rejoins = fleet.calls.filter((c) => c.op === "o" && c.held !== undefined);
    expect(rejoins.map((c) => c.paused?.map(([key]) => key))).toEqual([["k"], ["k"]]);
    // The new host has the key paused already (it never heard the pause call itself).
    expect(await b.queue.pause?.("k", 1)).toMatchObject({ already: true });
  });
});

describe("hosted fleet queue: a lost host's cool-down", () => {
  it("every owner reports the cool-down that follows the pause it heard: as long as the pause, past its end", async () => {
    const fleet = hostedFleet();
    const a = await fleet.open(1);
    const b = await fleet.open(2);
    await a.queue.pause?.("k", 2000);
    await new Promise((done) => setTimeout(done, 0)); // b hears the push
    fleet.replace();
    await Promise.all([a.relinked, b.relinked]);
    const rejoins = fleet.calls.filter((c) => c.op === "o" && c.held !== undefined);
    expect(rejoins).toHaveLength(2);
    for (const c of rejoins) {
      const [key, ms = 0, coolMs = 0] = c.paused?.[0] ?? [];
      expect(key).toBe("k");
      // The cool-down ends one pause length after the pause (coolDownEnd), on the owner's clock.
      expect(coolMs - ms).toBe(2000);
    }
  });
});

describe("hosted fleet queue: a lost host's cool-down job", () => {
  it("the owner running the cool-down's job reports it: the new host starts no other job until it is released", {
    timeout: 15_000,
  }, async () => {
    const fleet = hostedFleet();
    const heard: string[] = [];
    const hear = (who: string) => (_key: string, grants: readonly FleetGrant[]) => {
      for (const g of grants) heard.push(`${who}:${g.id}${g.cooling === true ? " cooling" : ""}`);
    };
    // ownerTtlMs 5000: the owners stay alive without heartbeats (and the new host's grace is 1 s).
    const a = await fleet.open(1, 5000, hear("a"));
    const b = await fleet.open(2, 5000, hear("b"));
    await a.queue.pause?.("k", 3000); // cools down until 6 s from now
    await new Promise((done) => setTimeout(done, 3050));
    await a.queue.enqueue("k", [{ id: "a1", priority: 5, cost: 1 }]);
    expect(heard).toEqual(["a:a1 cooling"]); // the cool-down's one job, running
    fleet.replace();
    // Before, a's rejoin (its cool-down reported as [key, ms, coolMs]) was refused by the socket
    // host's frame check, and the new host never heard the cool-down's job.
    await Promise.race([Promise.all([a.relinked, b.relinked]), new Promise((done) => setTimeout(done, 3000))]);
    expect(fleet.refused).toEqual([]);
    const rejoin = fleet.calls.find((c) => c.op === "o" && c.held !== undefined && c.paused?.[0]?.[3] === "a1");
    expect(rejoin).toBeDefined();
    await b.queue.enqueue("k", [{ id: "b1", priority: 5, cost: 1 }]);
    // Past the new host's grace (1 s), within the cool-down: b1 still waits for a1.
    await new Promise((done) => setTimeout(done, 1100));
    expect(heard).toEqual(["a:a1 cooling"]);
    await a.queue.release("k", "a1", false);
    await new Promise((done) => setTimeout(done, 10)); // b hears the push
    expect(heard.slice(1)).toEqual(["b:b1 cooling"]);
  });
});
