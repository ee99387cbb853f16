// An owner's end of a hosted fleet queue (fleet-queue-client.ts) whose host is lost and replaced
// (ClusterStore's socket host re-elected, SharedMemoryStore's hosting thread gone): what the
// owners heard of the lost host's fleet pauses is restored at the new one.
import { describe, expect, it } from "vitest";
import type { FleetQueue, FleetQueueConfig } from "../core/fleet-queue.ts";
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
  const transport = (worker: number): QueueTransport => ({
    peer: "the test host",
    rejoins: true,
    sequence: () => seq++,
    send(call) {
      calls.push(call);
      const reply = host.handle(worker, call);
      queueMicrotask(() => ears.get(worker)?.hear(reply));
    },
    listen(hear, lost) {
      ears.set(worker, { hear, lost });
      return () => ears.delete(worker);
    },
  });
  const open = async (worker: number): Promise<{ queue: FleetQueue; relinked: Promise<void> }> => {
    let relink: () => void = () => {};
    const relinked = new Promise<void>((done) => {
      relink = done;
    });
    const config: FleetQueueConfig = {
      rate: undefined,
      concurrency: { id: "c", spec: { algorithm: "concurrency", limit: 2, leaseMs: 5000 } },
      ownerTtlMs: 50,
      listener: { granted: () => {}, wake: () => {}, relinked: () => relink() },
    };
    return { queue: await openHostedFleetQueue(transport(worker), config, 1000), relinked };
  };
  const replace = () => {
    host.stop();
    if (options.sharedRecords !== true) store = new MemoryStore();
    host = make();
    for (const ear of [...ears.values()]) ear.lost();
  };
  return { open, replace, calls };
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
