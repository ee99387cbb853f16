import { describe, expect, test } from "vitest";
import { ConfigError } from "../core/errors.ts";
import { boundKey, clientKey, forwardedFor, MAX_KEY_LENGTH, parseSubnet, parseTrust } from "./client-key.ts";

describe("clientKey", () => {
  test("without trustProxy the socket address is the key, whatever the headers say", () => {
    expect(clientKey("198.51.100.7", "1.1.1.1, 2.2.2.2")).toBe("198.51.100.7");
    expect(clientKey("198.51.100.7", "1.1.1.1", { trustProxy: false })).toBe("198.51.100.7");
    expect(clientKey("198.51.100.7", "1.1.1.1", { trustProxy: 0 })).toBe("198.51.100.7");
  });

  test("one trusted hop: the rightmost X-Forwarded-For entry, not the client-written ones", () => {
    expect(clientKey("10.0.0.2", "6.6.6.6, 203.0.113.9", { trustProxy: 1 })).toBe("203.0.113.9");
    expect(clientKey("10.0.0.2", "203.0.113.9", { trustProxy: 1 })).toBe("203.0.113.9");
    expect(clientKey("10.0.0.2", "6.6.6.6,203.0.113.9:4711", { trustProxy: 1 })).toBe("203.0.113.9");
  });

  test("two trusted hops skip two; a chain shorter than the hops gives its leftmost entry", () => {
    expect(clientKey("10.0.0.2", "6.6.6.6, 203.0.113.9, 10.0.0.1", { trustProxy: 2 })).toBe("203.0.113.9");
    expect(clientKey("10.0.0.2", "203.0.113.9", { trustProxy: 3 })).toBe("203.0.113.9");
  });

  test("no header behind a trusted proxy: the proxy's own address", () => {
    expect(clientKey("10.0.0.2", undefined, { trustProxy: 1 })).toBe("10.0.0.2");
  });

  test("an address list trusts only those proxies: the rightmost untrusted address wins", () => {
    const trustProxy = ["10.0.0.0/8", "2001:db8:ffff::/48"];
    expect(clientKey("10.0.0.2", "6.6.6.6, 203.0.113.9, 10.0.0.1", { trustProxy })).toBe("203.0.113.9");
    // The socket is not a trusted proxy: the header is the client's own words.
    expect(clientKey("198.51.100.7", "203.0.113.9", { trustProxy })).toBe("198.51.100.7");
    expect(clientKey("2001:db8:ffff::1", "10.0.0.9, 192.0.2.4", { trustProxy })).toBe("192.0.2.4");
    // Every hop trusted: the leftmost entry.
    expect(clientKey("10.0.0.2", "10.1.1.1, 10.2.2.2", { trustProxy })).toBe("10.1.1.1");
  });

  test("garbage where the client address should be keeps the last trusted hop", () => {
    expect(clientKey("10.0.0.2", "6.6.6.6, unknown", { trustProxy: 1 })).toBe("10.0.0.2");
    expect(clientKey("10.0.0.2", "6.6.6.6, unknown, 10.0.0.1", { trustProxy: ["10.0.0.0/8"] })).toBe("10.0.0.1");
  });

  test("RFC 7239 Forwarded with proxyHeader 'forwarded'", () => {
    const header = 'for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https, for=192.0.2.60;by=10.0.0.1';
    expect(clientKey("10.0.0.2", header, { trustProxy: 1, proxyHeader: "forwarded" })).toBe("192.0.2.60");
    expect(clientKey("10.0.0.2", header, { trustProxy: 2, proxyHeader: "forwarded", ipv6Subnet: 128 })).toBe(
      "2001:db8:cafe::17",
    );
    expect(forwardedFor('For="_hidden";by=x, proto=http;FOR=1.2.3.4')).toEqual(['"_hidden"', "1.2.3.4"]);
  });

  test("IPv6 is grouped by /56 by default, and by ipv6Subnet when given", () => {
    const a = clientKey("2001:db8:1234:5601:aaaa::1", undefined);
    const b = clientKey("2001:db8:1234:56ff:ffff:ffff:ffff:ffff", undefined);
    const c = clientKey("2001:db8:1234:5700::1", undefined);
    expect(a).toBe("2001:db8:1234:5600::/56");
    expect(b).toBe(a);
    expect(c).toBe("2001:db8:1234:5700::/56");
    expect(clientKey("2001:db8:1234:5601:aaaa::1", undefined, { ipv6Subnet: 64 })).toBe("2001:db8:1234:5601::/64");
    expect(clientKey("2001:db8:1234:5601:aaaa::1", undefined, { ipv6Subnet: 128 })).toBe("2001:db8:1234:5601:aaaa::1");
    expect(clientKey("[::1]:8080", undefined)).toBe("::/56");
  });

  test("IPv4-mapped IPv6 is keyed as the IPv4 address (never grouped by /56)", () => {
    expect(clientKey("::ffff:1.2.3.4", undefined)).toBe("1.2.3.4");
    expect(clientKey("::ffff:102:304", undefined)).toBe("1.2.3.4");
    expect(clientKey("::ffff:1.2.3.5", undefined)).toBe("1.2.3.5");
    expect(clientKey("10.0.0.2", "::ffff:203.0.113.9", { trustProxy: 1 })).toBe("203.0.113.9");
    expect(clientKey("::ffff:10.0.0.2", "203.0.113.9", { trustProxy: ["10.0.0.0/8"] })).toBe("203.0.113.9");
  });

  test("a socket address that is not an IP gives no key", () => {
    expect(clientKey("not-an-ip", undefined)).toBeUndefined();
  });
});

describe("validation", () => {
  test.each([true, -1, 1.5, "1", ["10.0.0.0/33"], ["example.com"], [7]])("trustProxy %j is refused", (value) => {
    expect(() => parseTrust(value)).toThrow(ConfigError);
  });
  test("trustProxy true names the risk", () => {
    expect(() => parseTrust(true)).toThrow(/any client choose its own key/);
  });
  test.each([0, 129, 56.5, "56"])("ipv6Subnet %j is refused", (value) => {
    expect(() => parseSubnet(value)).toThrow(/ipv6Subnet/);
  });
});

describe("boundKey", () => {
  test("short keys are kept, long ones hashed to a fixed length", () => {
    expect(boundKey("user:42")).toBe("user:42");
    const long = "x".repeat(MAX_KEY_LENGTH + 1);
    const hashed = boundKey(long);
    expect(hashed).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
    expect(boundKey(`${long}y`)).not.toBe(hashed);
    expect(boundKey(long)).toBe(hashed);
  });
});
