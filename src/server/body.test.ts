import { describe, expect, it } from "vitest";
import { jsonDepth } from "./body.ts";

describe("jsonDepth", () => {
  it("counts array and object nesting, not brackets inside strings", () => {
    expect(jsonDepth('{"rule":"api","key":"k"}', 32)).toBe(1);
    expect(jsonDepth('[{"rule":"api","key":"k"}]', 32)).toBe(2);
    expect(jsonDepth('"[[[[{{{{"', 32)).toBe(0);
    expect(jsonDepth('{"key":"a\\"[[[[\\\\"}', 32)).toBe(1); // escaped quote, then an escaped backslash
    expect(jsonDepth("[[],[[]],[]]", 32)).toBe(3);
  });

  it("stops counting past the limit (a 5,000-deep body costs no more than 33 levels)", () => {
    expect(jsonDepth("[".repeat(5000), 32)).toBe(33);
    expect(jsonDepth(`${"[".repeat(32)}${"]".repeat(32)}`, 32)).toBe(32);
  });
});
