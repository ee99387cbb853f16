// The skip gate: CI means a truthy CI variable, and under CI a skip is a failure.
import { describe, expect, it, vi } from "vitest";
import { cannotRun, isCI } from "./skip.ts";

describe("isCI", () => {
  it.each([
    [undefined, false],
    ["", false],
    ["0", false],
    ["false", false],
    ["FALSE", false],
    ["no", false],
    ["off", false],
    [" false ", false],
    ["true", true],
    ["1", true],
    ["yes", true],
    ["github", true],
  ])("CI=%j is CI: %s", (value, expected) => {
    expect(isCI(value === undefined ? {} : { CI: value })).toBe(expected);
  });
});

describe("cannotRun", () => {
  it("throws under CI, naming what could not run and why", () => {
    expect(() => cannotRun("suite X", "no thing", { CI: "true" })).toThrow(/suite X cannot run: no thing.*CI is set/);
  });
  it("warns and returns true otherwise", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      expect(cannotRun("suite X", "no thing", { CI: "false" })).toBe(true);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining("SKIPPED: suite X cannot run: no thing"));
    } finally {
      warn.mockRestore();
    }
  });
});
