import { parseList } from "structured-headers";
import { describe, expect, test } from "vitest";
import { decision } from "../algorithms/decision.ts";
import { compilePolicies } from "./headers.ts";
import { distinctFrom, listNames, stackingSetter, tighter } from "./stack.ts";

describe("listNames", () => {
  test.each([
    ['"burst";q=100;w=60, "daily";q=5000;w=86400', ["burst", "daily"]],
    ['token;q=1, "with \\"quote\\"";q=2', ["token", 'with "quote"']],
    ['"a";x="b,c";q=1,"d"', ["a", "d"]],
    // express-rate-limit's draft-8 layout: spaces after each `;`, a byte-sequence partition key.
    ['"100-in-1min"; q=100; w=60; pk=:ZjRlMmI0ZGUzNmQ4:', ["100-in-1min"]],
    ['"erl"; r=99; t=60, (1 2);x, 5;n="n"', ["erl"]],
    ["", []],
  ])("%s", (value, names) => {
    expect(listNames(value)).toEqual(names);
    // Agrees with a full Structured Fields parser.
    expect(
      parseList(value)
        .filter(([item]) => typeof item === "string" || item?.constructor?.name === "Token")
        .map(([item]) => String(item)),
    ).toEqual(names);
  });

  test.each(['"unterminated', "1abc, x", '"a" "b"', '"a";q=1,'])("not a list: %s", (value) => {
    expect(listNames(value)).toBeUndefined();
  });
});

describe("stackingSetter", () => {
  const response = (initial: Record<string, string>) => {
    const headers = new Map(Object.entries(initial));
    const set = stackingSetter(
      (name, value) => headers.set(name.toLowerCase(), value),
      (name) => headers.get(name.toLowerCase()),
    );
    return { headers, set };
  };

  test("appends to draft-11 lists already set, replaces what is not a list", () => {
    const { headers, set } = response({ ratelimit: '"a";r=1;t=5', "ratelimit-policy": "garbage(" });
    set("RateLimit", '"b";r=0;t=9');
    set("RateLimit-Policy", '"b";q=2;w=9');
    set("X-Other", "1");
    expect(Object.fromEntries(headers)).toEqual({
      ratelimit: '"a";r=1;t=5, "b";r=0;t=9',
      "ratelimit-policy": '"b";q=2;w=9',
      "x-other": "1",
    });
  });

  test("appends after express-rate-limit's draft-8 headers (valid Structured Fields with spaces)", () => {
    const erl = '"100-in-1min"; q=100; w=60; pk=:ZjRlMmI0ZGUzNmQ4:';
    const { headers, set } = response({ ratelimit: '"100-in-1min"; r=99; t=60', "ratelimit-policy": erl });
    set("RateLimit-Policy", '"api";q=5;w=1');
    set("RateLimit", '"api";r=4;t=1');
    expect(headers.get("ratelimit-policy")).toBe(`${erl}, "api";q=5;w=1`);
    expect(parseList(headers.get("ratelimit") as string).map(([item]) => item)).toEqual(["100-in-1min", "api"]);
  });

  test("Retry-After keeps the longest wait", () => {
    const { headers, set } = response({ "retry-after": "30" });
    set("Retry-After", "6");
    expect(headers.get("retry-after")).toBe("30");
    set("Retry-After", "45");
    expect(headers.get("retry-after")).toBe("45");
  });
});

test("distinctFrom renames taken policy names, keeping the figures", () => {
  const set = compilePolicies([
    { name: "a", quota: 5, windowSeconds: 60 },
    { name: "b", quota: 9, windowSeconds: 1 },
  ]);
  expect(distinctFrom(set, ["x"])).toBe(set);
  expect(distinctFrom(set, ["a", "a-2", "b"]).policy11).toBe('"a-3";q=5;w=60, "b-2";q=9;w=1');
});

test("tighter: a denial wins, else the least remaining, else the later one", () => {
  const allowed = (remaining: number) => decision(true, 10, remaining, 0, 1000);
  const denied = decision(false, 10, 0, 500, 1000);
  expect(tighter(undefined, allowed(3))).toEqual(allowed(3));
  expect(tighter(allowed(1), denied)).toBe(denied);
  expect(tighter(denied, allowed(0))).toBe(denied);
  const two = allowed(2);
  expect(tighter(allowed(5), two)).toBe(two);
  const later = allowed(5);
  expect(tighter(allowed(5), later)).toBe(later);
});
