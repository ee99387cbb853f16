import { IncomingMessage } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { decision } from "../algorithms/decision.ts";
import { declareRateLimit } from "./express-request.ts";

describe("declareRateLimit", () => {
  it("keeps req.rateLimit per request behind the app prototype's accessor", () => {
    const appRequest = Object.create(IncomingMessage.prototype) as object;
    declareRateLimit(appRequest);
    expect(Object.getOwnPropertyDescriptor(appRequest, "rateLimit")?.get).toBeTypeOf("function");
    const socket = new Socket();
    const a = Object.setPrototypeOf(new IncomingMessage(socket), appRequest) as IncomingMessage;
    const b = Object.setPrototypeOf(new IncomingMessage(socket), appRequest) as IncomingMessage;
    expect(a.rateLimit).toBeUndefined();
    const first = decision(true, 10, 9, 0, 1000);
    a.rateLimit = first;
    expect(a.rateLimit).toBe(first);
    expect(b.rateLimit).toBeUndefined();
    // No own property is added to the request (the point: no new hidden class per request).
    expect(Object.hasOwn(a, "rateLimit")).toBe(false);
  });

  it("leaves Node's own prototype, Object.prototype and an existing declaration alone", () => {
    declareRateLimit(IncomingMessage.prototype);
    declareRateLimit(Object.prototype);
    declareRateLimit(null);
    expect("rateLimit" in IncomingMessage.prototype).toBe(false);
    expect("rateLimit" in {}).toBe(false);
    const own = { value: 1, writable: true };
    const taken = Object.create(IncomingMessage.prototype, { rateLimit: own }) as object;
    declareRateLimit(taken);
    expect(Object.getOwnPropertyDescriptor(taken, "rateLimit")?.value).toBe(1);
  });
});
