/**
 * The hand-written RLS codec against protobufjs (through @grpc/proto-loader, what the test client
 * and envoyproxy's own clients agree with): every request protobufjs encodes decodes to the shape
 * proto-loader gives, and every response encoded here decodes in protobufjs to what was encoded.
 * Seeded properties (SLUICE_SEED), plus the bound, unknown fields and malformed bytes.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeHealthRequest, encodeHealthResponse } from "../../src/server/envoy/health-codec.ts";
import { ProtoError } from "../../src/server/envoy/proto-reader.ts";
import { RequestRefused } from "../../src/server/envoy/request-bound.ts";
import { decodeRlsRequest, encodeRlsResponse } from "../../src/server/envoy/rls-codec.ts";
import type { RlsResponse } from "../../src/server/envoy/wire.ts";
import { rateLimitServiceDefinition } from "./envoy-client.ts";

const method = rateLimitServiceDefinition().ShouldRateLimit as unknown as {
  requestSerialize(v: unknown): Buffer;
  requestDeserialize(b: Buffer): unknown;
  responseDeserialize(b: Buffer): RlsResponse & Record<string, unknown>;
};
const bound = { maxDescriptors: 1000, maxEntries: 64, maxValueBytes: 512 };
const decode = (b: Buffer, within = bound) => decodeRlsRequest(b, 0, b.length, within);

const UNITS = ["UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR"] as const;
const text = fc.string({ unit: "binary", maxLength: 40 });
const uint32 = fc.integer({ min: 0, max: 4_294_967_295 });
const request = fc.record({
  domain: text,
  hits_addend: uint32,
  descriptors: fc.array(
    fc.record(
      {
        entries: fc.array(fc.record({ key: text, value: text }), { maxLength: 5 }),
        limit: fc.record({ requests_per_unit: uint32, unit: fc.constantFrom(...UNITS) }),
        hits_addend: fc.record({ value: fc.maxSafeNat() }),
      },
      { requiredKeys: ["entries"] },
    ),
    { maxLength: 6 },
  ),
});

describe("decodeRlsRequest", () => {
  it("decodes what protobufjs encodes to proto-loader's shape", () => {
    fc.assert(
      fc.property(request, (r) => {
        const bytes = method.requestSerialize(r);
        expect(decode(bytes)).toEqual(method.requestDeserialize(bytes));
      }),
      { numRuns: 300 },
    );
  });

  it("refuses past the bound, naming it", () => {
    const d = (n: number) => ({ entries: Array.from({ length: n }, () => ({ key: "k", value: "v" })) });
    const three = method.requestSerialize({ domain: "a", descriptors: [d(1), d(1), d(1)] });
    expect(() => decode(three, { ...bound, maxDescriptors: 2 })).toThrow(
      new RequestRefused("the request has more than 2 descriptors (the service's bound per request)"),
    );
    expect(decode(three, { ...bound, maxDescriptors: 3 }).descriptors).toHaveLength(3);
    const wide = method.requestSerialize({ domain: "a", descriptors: [d(3)] });
    expect(() => decode(wide, { ...bound, maxDescriptors: 9, maxEntries: 2 })).toThrow(
      new RequestRefused("a descriptor has more than 2 entries (the service's bound per descriptor)"),
    );
    // --max-key-length bounds each entry's key and value, measured in UTF-8 bytes before decoding.
    const at = (key: string, value: string) =>
      method.requestSerialize({ domain: "a", descriptors: [{ entries: [{ key, value }] }] });
    expect(decode(at("k", "é".repeat(5)), { ...bound, maxValueBytes: 10 }).descriptors).toHaveLength(1);
    expect(() => decode(at("k", "é".repeat(6)), { ...bound, maxValueBytes: 10 })).toThrow(
      new RequestRefused(
        "a descriptor entry's value is 12 bytes, longer than 10 (the service's bound, --max-key-length)",
      ),
    );
    expect(() => decode(at("x".repeat(11), "v"), { ...bound, maxValueBytes: 10 })).toThrow(
      new RequestRefused(
        "a descriptor entry's key is 11 bytes, longer than 10 (the service's bound, --max-key-length)",
      ),
    );
  });

  it("skips unknown fields of every wire type, and reads an unknown unit as its number", () => {
    const known = method.requestSerialize({ domain: "d", descriptors: [{ entries: [{ key: "k", value: "v" }] }] });
    // field 9 varint, field 10 fixed64, field 11 bytes, field 12 fixed32, then the known fields
    const unknown = Buffer.from([
      0x48, 0x96, 0x01, 0x51, 1, 2, 3, 4, 5, 6, 7, 8, 0x5a, 2, 0xff, 0xff, 0x65, 1, 2, 3, 4,
    ]);
    expect(decode(Buffer.concat([unknown, known]))).toEqual(decode(known));
    // a descriptor whose override has unit 9 (field 2 of RateLimitOverride)
    const odd = Buffer.from([0x0a, 1, 0x64, 0x12, 6, 0x12, 4, 0x08, 5, 0x10, 9]);
    expect(decode(odd).descriptors[0]?.limit).toEqual({ requests_per_unit: 5, unit: 9 });
  });

  it("throws ProtoError on truncated or malformed bytes", () => {
    const good = method.requestSerialize({ domain: "domain", descriptors: [{ entries: [{ key: "k", value: "v" }] }] });
    for (let cut = 1; cut < good.length; cut++)
      if (cut !== 8) expect(() => decode(good.subarray(0, cut)), `cut at ${cut}`).toThrow(ProtoError);
    expect(() => decode(Buffer.from([0x0b]))).toThrow(ProtoError); // wire type 3 (group)
    expect(() => decode(Buffer.from([0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).toThrow(
      ProtoError,
    );
  });
});

const status = fc.record({
  code: fc.constantFrom("OK" as const, "OVER_LIMIT" as const),
  current_limit: fc.option(
    fc.record({ requests_per_unit: uint32, unit: fc.constantFrom(...UNITS.slice(1)), name: text }),
    { nil: null },
  ),
  limit_remaining: uint32,
  duration_until_reset: fc.option(
    fc.record({ seconds: fc.integer({ min: 0, max: 2 ** 40 }), nanos: fc.integer({ min: 0, max: 999_999_999 }) }),
    { nil: null },
  ),
});
const response = fc.record({
  overall_code: fc.constantFrom("OK" as const, "OVER_LIMIT" as const),
  statuses: fc.array(status, { maxLength: 6 }),
  response_headers_to_add: fc.array(fc.record({ key: text, value: text }), { maxLength: 3 }),
});

describe("encodeRlsResponse", () => {
  it("encodes what protobufjs decodes back to the same response, after the prefix left free", () => {
    fc.assert(
      fc.property(response, fc.integer({ min: 0, max: 8 }), (r, prefix) => {
        const { buf, length } = encodeRlsResponse(r, prefix);
        expect(buf.length).toBe(prefix + length);
        const back = method.responseDeserialize(buf.subarray(prefix));
        expect(back).toMatchObject({
          overall_code: r.overall_code,
          statuses: r.statuses.map((s) => ({ ...s })),
          response_headers_to_add: r.response_headers_to_add.map((h) => ({ ...h, raw_value: Buffer.alloc(0) })),
        });
      }),
      { numRuns: 300 },
    );
  });
});

describe("health codec", () => {
  it("reads the service name and answers SERVING or NOT_SERVING", () => {
    const req = Buffer.concat([Buffer.from([0x0a, 5]), Buffer.from("envoy")]);
    expect(decodeHealthRequest(req, 0, req.length)).toBe("envoy");
    expect(decodeHealthRequest(Buffer.alloc(0), 0, 0)).toBe("");
    expect([...encodeHealthResponse("SERVING", 0).buf]).toEqual([8, 1]);
    expect([...encodeHealthResponse("NOT_SERVING", 5).buf.subarray(5)]).toEqual([8, 2]);
  });
});
