import { describe, expect, it } from "vitest";
import { SPEC_FIELDS } from "../core/spec.ts";
import { checkOptionKeys } from "./check-options.ts";

describe("checkOptionKeys", () => {
  it.each([
    ["burst", "burst"],
    ["ANCHOR", "anchor"],
    ["periodms", "periodMs"],
    ["Algorithm", "algorithm"],
  ])("hints that `%s` belongs inside spec", (key, field) => {
    expect(() => checkOptionKeys({ [key]: 1 }, [])).toThrow(`(\`${field}\` belongs inside \`spec\`)`);
  });

  it("hints every field of every algorithm, from the spec's one table", () => {
    for (const field of SPEC_FIELDS) {
      expect(() => checkOptionKeys({ [field]: 1 }, [])).toThrow(`(\`${field}\` belongs inside \`spec\`)`);
    }
    expect(SPEC_FIELDS).toEqual(expect.arrayContaining(["burst", "anchor", "leakPerSecond", "refillPerSecond"]));
  });

  it("prefers an option's own spelling, and names an unknown key plainly", () => {
    expect(() => checkOptionKeys({ trustproxy: true }, [])).toThrow("(did you mean `trustProxy`?)");
    expect(() => checkOptionKeys({ nonsense: 1 }, [])).toThrow(/^unknown rateLimit option `nonsense`$/);
  });
});
