import { describe, expect, test } from "vitest";
import { ConfigError } from "../core/errors.ts";
import { parseIp } from "./ip-address.ts";
import { compileList } from "./lists.ts";

const ip = (text: string) => {
  const bytes = parseIp(text);
  if (bytes === undefined) throw new Error(`bad test address ${text}`);
  return bytes;
};

describe("compileList", () => {
  test("IPv4 and IPv6 addresses and CIDRs; IPv4-mapped IPv6 is the IPv4 client", () => {
    const list = compileList("allowList", ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::1"]);
    expect(list).toBeDefined();
    const has = (text: string) => list?.has(ip(text));
    expect([has("10.255.0.1"), has("::ffff:10.1.2.3"), has("192.0.2.7"), has("2001:db8:ffff::1"), has("::1")]).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect([has("11.0.0.1"), has("192.0.2.8"), has("2001:db9::1"), has("::2")]).toEqual([false, false, false, false]);
  });

  test("absent or empty: no list", () => {
    expect(compileList("denyList", undefined)).toBeUndefined();
    expect(compileList("denyList", [])).toBeUndefined();
  });

  test("bad entries fail at construction, naming the option and the entry", () => {
    expect(() => compileList("denyList", "10.0.0.0/8")).toThrow(ConfigError);
    expect(() => compileList("denyList", "10.0.0.0/8")).toThrow(/`denyList` must be an array .*got "10.0.0.0\/8"/);
    expect(() => compileList("allowList", ["10.0.0.0/33"])).toThrow(/`allowList` entries .*got "10.0.0.0\/33"/);
    expect(() => compileList("allowList", [42])).toThrow(/got 42/);
  });
});
