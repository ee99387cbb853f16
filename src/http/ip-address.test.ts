import { describe, expect, test } from "vitest";
import { formatIp, parseIp, parseRanges } from "./ip-address.ts";
import { within } from "./test-support/within.ts";

const text = (input: string) => {
  const bytes = parseIp(input);
  return bytes === undefined ? undefined : formatIp(bytes);
};

describe("parseIp / formatIp", () => {
  test.each([
    ["1.2.3.4", "1.2.3.4"],
    ["1.2.3.4:5678", "1.2.3.4"],
    [" 203.0.113.9 ", "203.0.113.9"],
    ['"192.0.2.60"', "192.0.2.60"],
    ["::1", "::1"],
    ["[::1]:443", "::1"],
    ['"[2001:db8:cafe::17]:4711"', "2001:db8:cafe::17"],
    ["fe80::1%eth0", "fe80::1"],
    ["2001:DB8:0:0:0:0:0:1", "2001:db8::1"],
    ["2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["2001:db8:1:1:1:1:1:1", "2001:db8:1:1:1:1:1:1"],
    ["2001:db8::1:1:1:1:1", "2001:db8:0:1:1:1:1:1"],
    ["::", "::"],
    // IPv4-mapped IPv6, dotted and hex, short and long: all the IPv4 client
    ["::ffff:1.2.3.4", "1.2.3.4"],
    ["::ffff:102:304", "1.2.3.4"],
    ["::FFFF:0102:0304", "1.2.3.4"],
    ["0:0:0:0:0:ffff:1.2.3.4", "1.2.3.4"],
    ["[::ffff:1.2.3.4]:80", "1.2.3.4"],
    // IPv4-compatible (deprecated) and NAT64 are other addresses, not the IPv4 one
    ["::1.2.3.4", "::102:304"],
    ["64:ff9b::1.2.3.4", "64:ff9b::102:304"],
  ])("%s → %s", (input, expected) => {
    expect(text(input)).toBe(expected);
  });

  test.each([
    "",
    "unknown",
    "_hidden",
    "1.2.3",
    "1.2.3.4.5",
    "256.1.1.1",
    "01.2.3.4",
    "1.2.3.4:",
    "1.2.3.4:port",
    "1::2::3",
    "1:2:3:4:5:6:7:8:9",
    "1:2:3:4:5:6:7",
    "12345::",
    "g::1",
    "[::1",
    "[::1]x",
    "::ffff:1.2.3.256",
    "1:2:3:4:5:6:7::8",
  ])("rejects %j", (input) => {
    expect(parseIp(input)).toBeUndefined();
  });
});

describe("ranges", () => {
  test.each([
    ["10.1.2.3", "10.0.0.0/8", true],
    ["11.1.2.3", "10.0.0.0/8", false],
    ["172.31.255.255", "172.16.0.0/12", true],
    ["172.32.0.0", "172.16.0.0/12", false],
    ["::ffff:10.9.9.9", "10.0.0.0/8", true],
    ["10.9.9.9", "::ffff:10.0.0.0/104", true],
    ["192.0.2.1", "192.0.2.1", true],
    ["192.0.2.2", "192.0.2.1", false],
    ["192.0.2.2", "0.0.0.0/0", true],
    ["2001:db8::1", "2001:db8::/32", true],
    ["2001:db9::1", "2001:db8::/32", false],
    ["fd12::1", "fc00::/7", true],
    ["::1", "loopback", true],
    ["127.5.5.5", "loopback", true],
    ["::ffff:127.0.0.1", "loopback", true],
    ["8.8.8.8", "loopback", false],
    ["192.168.1.1", "uniquelocal", true],
    ["fe80::9", "linklocal", true],
  ])("%s in %s: %s", (address, range, expected) => {
    expect(within(address, range)).toBe(expected);
  });

  test.each([
    "10.0.0.0/33",
    "::/129",
    "10.0.0.0/x",
    "nope",
    "[::1]/128",
    "[::1]",
    "toString",
    "10.0.0.1:80/24",
    "10.0.0.1:80",
    "fe80::1%eth0",
  ])("rejects %j", (range) => {
    expect(parseRanges(range)).toBeUndefined();
  });
});
