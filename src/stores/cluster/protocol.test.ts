import { describe, expect, it } from "vitest";
import { type Decision, decision } from "../../algorithms/decision.ts";
import { combine } from "../../core/composite.ts";
import { decode, encode } from "./protocol.ts";

/** What a decision becomes after a trip through the IPC channel (JSON, as node:cluster and PM2 send). */
const trip = (d: Decision) => decode(JSON.parse(JSON.stringify(encode(d))));

describe("cluster wire decisions", () => {
  it("round-trip through JSON, Infinity included", () => {
    const denied = decision(false, 3, 0, Number.POSITIVE_INFINITY, 250);
    expect(trip(denied)).toEqual(denied);
    const allowed = decision(true, 10, 9, 0, 100, 40);
    expect(trip(allowed)).toEqual(allowed);
  });

  it("keep a composite's parts and fields the core adds later (e.g. approximate, banned)", () => {
    const composite = combine([decision(true, 5, 4, 0, 10), decision(false, 2, 0, 30, 30)]);
    expect(trip(composite)).toEqual(composite);
    const flagged = { ...decision(false, 5, 0, 900, 900), banned: true, approximate: true } as Decision;
    expect(trip(flagged)).toEqual(flagged);
  });
});
