import { describe, expect, it } from "vitest";
import { Coalescer, nextTurn } from "./coalescer.ts";

class Batch {
  readonly calls: string[] = [];
  constructor(readonly context: string) {}
  get size(): number {
    return this.calls.length;
  }
}

function setup(maxBatch?: number) {
  const sent: Array<{ context: string; calls: string[] }> = [];
  const coalescer = new Coalescer<number, Batch, string>(
    (context) => new Batch(context),
    (batch) => sent.push({ context: batch.context, calls: batch.calls }),
    maxBatch,
  );
  const call = (destination: number, name: string) => {
    const batch = coalescer.open(destination, `node ${destination}`);
    batch.calls.push(name);
    coalescer.added(destination, batch);
  };
  return { sent, coalescer, call };
}

const turn = () => new Promise<void>((resolve) => nextTurn(resolve));

describe("Coalescer", () => {
  it("one turn's calls travel as one batch per destination, on the next macrotask", async () => {
    const { sent, call } = setup();
    call(1, "a");
    await Promise.resolve(); // continuations of the same turn still join
    call(2, "b");
    call(1, "c");
    expect(sent).toEqual([]);
    await turn();
    expect(sent).toEqual([
      { context: "node 1", calls: ["a", "c"] },
      { context: "node 2", calls: ["b"] },
    ]);
    call(1, "d");
    await turn();
    expect(sent.at(-1)).toEqual({ context: "node 1", calls: ["d"] });
  });

  it("a full batch leaves at once, mid-turn; the rest follow at the turn's end", async () => {
    const { sent, call } = setup(2);
    call(1, "a");
    call(1, "b");
    expect(sent).toEqual([{ context: "node 1", calls: ["a", "b"] }]);
    call(1, "c");
    await turn();
    expect(sent).toEqual([
      { context: "node 1", calls: ["a", "b"] },
      { context: "node 1", calls: ["c"] },
    ]);
  });

  it("flush sends what is open now, and the scheduled flush then finds nothing", async () => {
    const { sent, call, coalescer } = setup();
    call(1, "a");
    coalescer.flush();
    expect(sent).toEqual([{ context: "node 1", calls: ["a"] }]);
    await turn();
    expect(sent.length).toBe(1);
  });
});
