// Edges of address parsing the tables beside it left open (found by the mutation run,
// docs/testing.md): malformed dotted quads, quotes on one side only, anchored port and prefix
// syntax, overlong zone ids, near-mapped IPv6, and the named ranges one by one.
import { describe, expect, test } from "vitest";
import { formatIp, parseIp, parseRanges } from "./ip-address.ts";
import { within } from "./test-support/within.ts";

const text = (input: string) => {
  const bytes = parseIp(input);
  return bytes === undefined ? undefined : formatIp(bytes);
};

describe("parseIp edges", () => {
  test.each([
    ["[::1]", "::1"], // brackets without a port
    ['"1.2.3.4"', "1.2.3.4"],
    [`fe80::1%${"e".repeat(56)}`, "fe80::1"], // 64 characters: the longest accepted
    ["::ff00:102:304", "::ff00:102:304"], // one byte short of IPv4-mapped: an IPv6 address
    ["::ff:102:304", "::ff:102:304"],
  ])("%s → %s", (input, expected) => {
    expect(text(input)).toBe(expected);
  });

  test.each([
    "1..2.3",
    ".1.2.3",
    "1.2.3.",
    "1.2.3.a", // a letter is not a digit
    "1.2.3.4/", // nor is "/" (just below "0")
    "1000.1.1.1", // four digits
    "1.2.3.1000",
    '11.2.3.4"', // a quote on one side is no quoting
    '"1.2.3.44',
    `fe80::1%${"e".repeat(57)}`, // 65 characters
    "[::1]x:80",
    "[::1]:80x",
    "1.2.3.4:x80",
    "1.2.3.4:80x",
  ])("rejects %j", (input) => {
    expect(parseIp(input)).toBeUndefined();
  });
});

describe("parseRanges edges", () => {
  test.each([
    ["169.254.7.7", "linklocal", true],
    ["169.255.7.7", "linklocal", false],
    ["10.200.0.1", "uniquelocal", true],
    ["172.20.0.1", "uniquelocal", true],
    ["fd00::1", "uniquelocal", true],
    ["fe00::1", "uniquelocal", false],
  ])("%s in %s: %s", (address, range, expected) => {
    expect(within(address, range)).toBe(expected);
  });

  test.each([
    "10.20.30.40:80", // an IPv4 address with a port is no range, whatever its digits
    "10.20.30.40:80/24",
    "10.0.0.0/x8",
    "10.0.0.0/8x",
  ])("rejects %j", (range) => {
    expect(parseRanges(range)).toBeUndefined();
  });
});
