// The waiting line: priority first, then arrival, with removal from anywhere; a seeded property
// holds it to a sorted array (the oracle) under random pushes, re-insertions, takes and removals.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PriorityQueue, type QueueNode } from "./priority-queue.ts";

const node = (priority: number, seq: number): QueueNode => ({
  priority,
  seq,
  prev: undefined,
  next: undefined,
  queued: false,
});

const order = (q: PriorityQueue<QueueNode>) => [...q].map((n) => `${n.priority}:${n.seq}`);

describe("PriorityQueue", () => {
  it("serves priority 0 first, arrival order within a priority", () => {
    const q = new PriorityQueue<QueueNode>();
    for (const [p, s] of [
      [5, 0],
      [9, 1],
      [0, 2],
      [5, 3],
      [0, 4],
    ] as const)
      q.push(node(p, s));
    expect(order(q)).toEqual(["0:2", "0:4", "5:0", "5:3", "9:1"]);
    expect(q.peek()?.seq).toBe(2);
    expect(q.size).toBe(5);
  });

  it("removes from the head, the middle and the tail; a second removal is refused", () => {
    const q = new PriorityQueue<QueueNode>();
    const ns = [0, 1, 2, 3].map((s) => node(5, s));
    for (const n of ns) q.push(n);
    expect(q.remove(ns[1] as QueueNode)).toBe(true);
    expect(q.remove(ns[1] as QueueNode)).toBe(false);
    expect(q.remove(ns[0] as QueueNode)).toBe(true);
    expect(q.remove(ns[3] as QueueNode)).toBe(true);
    expect(order(q)).toEqual(["5:2"]);
    q.remove(ns[2] as QueueNode);
    expect(q.peek()).toBeUndefined();
    expect(q.size).toBe(0);
  });

  it("puts a job back at its arrival place", () => {
    const q = new PriorityQueue<QueueNode>();
    for (const s of [3, 5, 8]) q.push(node(1, s));
    q.insertInOrder(node(1, 1));
    q.insertInOrder(node(1, 6));
    q.insertInOrder(node(1, 9));
    expect(order(q)).toEqual(["1:1", "1:3", "1:5", "1:6", "1:8", "1:9"]);
  });

  it("matches a sorted array under random operations", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("push" as const), priority: fc.integer({ min: 0, max: 9 }) }),
      fc.record({ kind: fc.constant("reinsert" as const), priority: fc.integer({ min: 0, max: 9 }) }),
      fc.record({ kind: fc.constant("take" as const) }),
      fc.record({ kind: fc.constant("remove" as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const q = new PriorityQueue<QueueNode>();
        let oracle: QueueNode[] = [];
        let seq = 1000;
        const sort = () => oracle.sort((a, b) => a.priority - b.priority || a.seq - b.seq);
        for (const o of ops) {
          if (o.kind === "push") {
            const n = node(o.priority, seq++);
            q.push(n);
            oracle.push(n);
          } else if (o.kind === "reinsert") {
            // An old arrival number, as a retried request keeps.
            const n = node(o.priority, seq - 1000 - oracle.length);
            q.insertInOrder(n);
            oracle.push(n);
          } else if (o.kind === "take") {
            sort();
            const head = q.peek();
            expect(head).toBe(oracle[0]);
            if (head !== undefined) q.remove(head);
            oracle.shift();
          } else if (oracle.length > 0) {
            const n = oracle[o.pick % oracle.length] as QueueNode;
            expect(q.remove(n)).toBe(true);
            oracle = oracle.filter((x) => x !== n);
          }
          sort();
          expect([...q]).toEqual(oracle);
          expect(q.size).toBe(oracle.length);
        }
      }),
    );
  });
});
