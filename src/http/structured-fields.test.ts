// Our Structured Fields List parser against the reference parser (structured-headers, a
// devDependency): the same values accepted, the same items and parameters read.
import fc from "fast-check";
import { parseList, serializeList } from "structured-headers";
import { describe, expect, test } from "vitest";
import { parseSfList, SF_MAX_INTEGER, type SfBareItem, type SfMember, sfInteger } from "./structured-fields.ts";

/** The reference parser's reading, in our shape (undefined when it refuses). */
function reference(value: string): unknown {
  let parsed: ReturnType<typeof parseList>;
  try {
    parsed = parseList(value);
  } catch {
    return undefined;
  }
  const bare = (v: unknown): unknown => {
    if (v === null || typeof v !== "object") return v;
    if (v instanceof ArrayBuffer) return { bytes: Buffer.from(v).toString("base64") };
    if (v instanceof Date) return { date: v.getTime() / 1000 };
    const ctor = (v as object).constructor?.name;
    if (ctor === "Token") return { token: String(v) };
    if (ctor === "DisplayString") return String(v);
    return v;
  };
  return parsed.map(([item, params]) => ({
    value: Array.isArray(item)
      ? item.map(([i, p]) => ({ value: bare(i), params: [...p].map(([k, x]) => [k, bare(x)]) }))
      : bare(item),
    params: [...params].map(([k, x]) => [k, bare(x)]),
  }));
}

/** Ours, with byte sequences compared by their decoded bytes (the reference re-encodes them). */
function ours(value: string): unknown {
  const parsed = parseSfList(value);
  if (parsed === undefined) return undefined;
  const bare = (v: SfBareItem): unknown =>
    typeof v === "object" && "bytes" in v ? { bytes: Buffer.from(v.bytes, "base64").toString("base64") } : v;
  const member = (m: SfMember): unknown => ({
    value: Array.isArray(m.value) ? m.value.map(member) : bare(m.value as SfBareItem),
    params: m.params.map(([k, v]) => [k, bare(v)]),
  });
  return parsed.map(member);
}

describe("parseSfList", () => {
  test.each([
    '"burst";q=100;w=60, "daily";q=5000;w=86400',
    '"erl"; q=100; w=60; pk=:MTIzNDU2Nzg5MGFiY2RlZg==:',
    'token;q=1, "with \\"quote\\"";q=2',
    '"a";x="b,c";q=1,"d"',
    '(1 2 "x");a, (), ( a  b );c=?0',
    '1.5, -0.25;x=?1, %"caf%c3%a9"',
    "@1700000000", // (structured-headers 2.1 refuses a Date before a comma; RFC 9651 allows it)
    "  a ,\tb  ",
    "*x, a:b/c",
    "",
    "1.",
    "1234567890123456",
    "123456789012.1234",
    '"unterminated',
    "1abc, x",
    '"a" "b"',
    '"a";q=1,',
    "a;Q=1",
    "a; ;q=1",
    "(a b",
    "(a)b",
    ":not base64!:",
    "?2",
    "@1.5",
    '%"%C3%A9"',
    '%"%ff"',
    '"tab\there"',
  ])("%s: as the reference parser reads it", (value) => {
    expect(ours(value)).toEqual(reference(value));
  });

  test("random lists the reference serialises read back alike (seeded)", () => {
    const key = fc.stringMatching(/^[a-z*][a-z0-9_.*-]{0,5}$/);
    const bare = fc.oneof(
      fc.integer({ min: -SF_MAX_INTEGER, max: SF_MAX_INTEGER }),
      fc.stringMatching(/^[ -~]{0,8}$/),
      fc.boolean(),
      fc.integer({ min: -999_999, max: 999_999 }).map((n) => n / 1000),
    );
    const params = fc.array(fc.tuple(key, bare), { maxLength: 3 }).map((p) => new Map(p));
    const item = fc.tuple(bare, params);
    const member = fc.oneof(item, fc.tuple(fc.array(item, { maxLength: 3 }), params));
    fc.assert(
      fc.property(fc.array(member, { maxLength: 4 }), (list) => {
        const text = serializeList(list as never);
        expect(ours(text)).toEqual(reference(text));
        expect(parseSfList(text)).toBeDefined();
      }),
      { seed: 1919, numRuns: 500 },
    );
  });

  test("random text is accepted exactly when the reference accepts it (seeded)", () => {
    const text = fc.stringMatching(/^[a-z0-9 ,;=()"\\:?@%.*+/-]{0,16}$/);
    let accepted = 0;
    fc.assert(
      fc.property(text, (value) => {
        const want = reference(value);
        expect(ours(value)).toEqual(want);
        if (want !== undefined) accepted++;
      }),
      { seed: 9191, numRuns: 3000 },
    );
    expect(accepted).toBeGreaterThan(100); // both branches exercised
  });
});

test("sfInteger clamps to the 15 digits a parser accepts", () => {
  expect(sfInteger(42)).toBe("42");
  expect(sfInteger(1e15)).toBe("999999999999999");
  expect(sfInteger(9_007_199_254_740_991_000)).toBe("999999999999999");
  expect(() => parseList(`a;w=${sfInteger(1e300)}`)).not.toThrow();
});
