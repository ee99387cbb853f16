// Edges of client keys the tables beside it left open (found by the mutation run,
// docs/testing.md): what the validators return and name, Forwarded pairs without "=", an
// unparsable socket behind trusted proxies, the store key's markers and the length boundary.
import { describe, expect, test } from "vitest";
import { base64url, sha256 } from "../core/digest.ts";
import { ConfigError } from "../core/errors.ts";
import {
  boundKey,
  clientKey,
  forwardedFor,
  MAX_KEY_LENGTH,
  parseSubnet,
  parseTrust,
  resolveClient,
  storeKey,
} from "./client-key.ts";

/** The ConfigError `fn` throws. */
function refusal(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("no error thrown");
}

describe("parseTrust and parseSubnet", () => {
  test("what trustProxy becomes", () => {
    expect(parseTrust(0)).toEqual({ kind: "none" });
    expect(parseTrust(2)).toEqual({ kind: "hops", hops: 2 });
    expect(parseTrust([])).toEqual({ kind: "none" });
    expect(parseTrust([" 10.0.0.0/8 "])).toMatchObject({ kind: "list", ranges: [{ prefix: 104 }] });
  });

  test("refusals name the field and what was wrong", () => {
    const hops = refusal(() => parseTrust(-1));
    expect(hops.field).toBe("trustProxy");
    expect(hops.message).toContain("`trustProxy` must be a non-negative integer of hops (got -1)");
    const entry = refusal(() => parseTrust(["example.com"]));
    expect(entry.field).toBe("trustProxy");
    expect(entry.message).toContain("`trustProxy` entries must be IP addresses, CIDR ranges");
    expect(entry.message).toContain("example.com");
    expect(refusal(() => parseTrust(true)).field).toBe("trustProxy");
    const subnet = refusal(() => parseSubnet(0));
    expect(subnet.field).toBe("ipv6Subnet");
    expect(subnet.message).toContain("`ipv6Subnet` must be an integer prefix length from 1 to 128 (got 0)");
  });

  test("ipv6Subnet 1 and 128 are the bounds, both accepted", () => {
    expect(parseSubnet(1)).toBe(1);
    expect(parseSubnet(128)).toBe(128);
    expect(parseSubnet(undefined)).toBe(56);
  });
});

describe("forwardedFor", () => {
  test("a pair without '=' is no for=, and values are trimmed", () => {
    expect(forwardedFor("forx")).toEqual([]);
    expect(forwardedFor("for= 1.2.3.4 ;by=x")).toEqual(["1.2.3.4"]);
  });
});

describe("resolveClient", () => {
  test("no socket address, or an unparsable one, gives no client, whatever the headers say", () => {
    expect(resolveClient(undefined, ["1.2.3.4"], { kind: "hops", hops: 1 })).toBeUndefined();
    expect(clientKey("not-an-ip", "203.0.113.9", { trustProxy: 1 })).toBeUndefined();
    expect(clientKey("not-an-ip", "203.0.113.9", { trustProxy: ["0.0.0.0/0"] })).toBeUndefined();
  });
});

describe("keys", () => {
  test("a key of exactly MAX_KEY_LENGTH is kept; one more is hashed", () => {
    const exact = "x".repeat(MAX_KEY_LENGTH);
    expect(boundKey(exact)).toBe(exact);
    expect(storeKey(exact, false)).toBe(`k:${exact}`);
    expect(storeKey(`${exact}y`, false)).toBe(`h:${base64url(sha256(`${exact}y`))}`);
  });

  test("addresses, plain keys and hashed keys each carry their own marker", () => {
    expect(storeKey("1.2.3.4", true)).toBe("a:1.2.3.4");
    expect(storeKey("1.2.3.4", false)).toBe("k:1.2.3.4");
    expect(storeKey("x".repeat(MAX_KEY_LENGTH + 1), true)).toBe(`a:${"x".repeat(MAX_KEY_LENGTH + 1)}`);
  });
});
