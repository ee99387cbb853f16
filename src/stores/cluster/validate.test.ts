import { describe, expect, it } from "vitest";
import { QUEUE_CHANNEL } from "../fleet-queue-host.ts";
import { CHANNEL } from "./protocol.ts";
import { invalidBatch, invalidQueueCall } from "./validate.ts";

const batch = (ops: unknown[]) => ({ channel: CHANNEL, type: "batch", seq: 1, ops });
const NOW = Date.UTC(2026, 11, 1);

describe("invalidBatch: operations from a socket peer", () => {
  it.each([
    ["a check", [0, "k", 1, NOW, "check"]],
    ["a check on the host's time", [0, "k", 2, null, "check"]],
    ["a refund without a receipt", [0, "k", 1, NOW, "refund"]],
    ["a refund with its receipt", [0, "k", 1, NOW, "refund", NOW - 5]],
    ["a lease's release", [0, "k", 1, NOW, "release", NOW - 5]],
    ["a lease's renewal on the host's time", [0, "k", 2, null, "renew", NOW - 5]],
  ])("accepts %s", (_name, op) => {
    expect(invalidBatch(batch([op]))).toBeUndefined();
  });

  it.each([
    ["a negative cost", [0, "k", -1000, NOW, "check"], "the cost is not a positive safe integer"],
    ["a receipt on a check", [0, "k", 1, NOW, "check", NOW], "only a refund, a release or a renewal carries"],
    ["a release without its receipt", [0, "k", 1, NOW, "release"], "a release carries a sixth item"],
    ["a renewal without its receipt", [0, "k", 1, NOW, "renew"], "a renew carries a sixth item"],
    ["a release naming no instant", [0, "k", 1, NOW, "release", null], "release's receipt `at` is not a finite"],
    ["a receipt that is not an instant", [0, "k", 1, NOW, "refund", "yesterday"], "receipt `at` is not a finite"],
    ["an infinite receipt", [0, "k", 1, NOW, "refund", Number.POSITIVE_INFINITY], "receipt `at` is not a finite"],
    ["a 7-tuple", [0, "k", 1, NOW, "refund", NOW, 1], "not a 5-tuple"],
    ["a 4-tuple", [0, "k", 1, NOW], "not a 5-tuple"],
  ])("refuses %s", (_name, op, why) => {
    expect(invalidBatch(batch([op]))).toContain(why);
  });
});

const call = (fields: object) => ({
  channel: QUEUE_CHANNEL,
  type: "queue",
  seq: 1,
  owner: "3.1",
  key: "k",
  args: [],
  ...fields,
});
const rules = { rate: null, concurrency: { id: "c", spec: { algorithm: "concurrency", limit: 2 } }, ownerTtlMs: 500 };

describe("invalidQueueCall: fleet queue calls from a socket peer", () => {
  it.each([
    ["an open", { op: "o", owner: "", rules }],
    [
      "a rejoin with held grants",
      {
        op: "o",
        owner: "",
        rules,
        held: [
          ["k", "7", 1, 1, NOW],
          ["k", "8", 0, 2, null],
        ],
      },
    ],
    ["a rejoin with the fleet pauses heard", { op: "o", owner: "", rules, held: [], paused: [["k", 2500]] }],
    // A cool-down (its ms), and the cool-down's running job this owner holds: refused before, so a
    // rejoin after a socket host's crash during a cool-down closed the owner's connection, again and again.
    [
      "a rejoin with a cool-down and its job",
      {
        op: "o",
        rules,
        held: [],
        paused: [
          ["k", 0, 900, "7"],
          ["j", 5, 10],
        ],
      },
    ],
    ["an enqueue", { op: "e", args: ["7", 0, 1, 0] }],
    ["a release", { op: "r", args: ["7", 1] }],
  ])("accepts %s", (_name, fields) => {
    expect(invalidQueueCall(call(fields))).toBeUndefined();
  });

  it.each([
    ["an unknown operation", { op: "z" }, "unknown fleet queue operation"],
    ["an open without rules", { op: "o" }, "an open carries no rules"],
    ["rules on an enqueue", { op: "e", rules }, "only an open carries rules"],
    ["a held grant of negative cost", { op: "o", rules, held: [["k", "7", 1, -5, NOW]] }, "cost not a positive"],
    ["a held grant that is not a tuple", { op: "o", rules, held: [{}] }, "is not a 5-tuple"],
    ["a pause that is not a key and ms", { op: "o", rules, paused: [["k"]] }, "is not a key and a number of ms"],
    ["pauses on an enqueue", { op: "e", paused: [["k", 5]] }, "only an open carries rules"],
    ["a cool-down's job id that is not a string", { op: "o", rules, paused: [["k", 0, 9, 7]] }, "is not a key and"],
    ["arguments that are objects", { op: "e", args: [{}] }, "`args` holds"],
    ["a key that is not a string", { op: "h", key: 5 }, "the key is not a string"],
    ["no sequence number", { op: "h", seq: -1 }, "`seq`"],
  ])("refuses %s", (_name, fields, why) => {
    expect(invalidQueueCall(call(fields))).toContain(why);
  });
});
