/**
 * The RLS messages of ratelimit.proto, decoded and encoded by hand: `RateLimitRequest` in (with
 * the request bound enforced while reading) and `RateLimitResponse` out. The shapes are those
 * @grpc/proto-loader gives with `wire.ts`'s options (defaults filled in, absent messages null,
 * enums as names), so deciding does not depend on how the bytes were read. Field numbers are the
 * published ones in ratelimit.proto; unknown fields are skipped, as proto3 requires.
 */
import { ProtoReader } from "./proto-reader.ts";
import { delimitedSize, ProtoWriter, varintSize } from "./proto-writer.ts";
import { type RequestBound, tooManyDescriptors, tooManyEntries, valueTooLong } from "./request-bound.ts";
import type { RlsDescriptor, RlsHeader, RlsRequest, RlsResponse, RlsStatus } from "./wire.ts";

/** `RateLimitResponse.RateLimit.Unit` by number (an unknown number stays a number, as proto-loader leaves it). */
const UNITS = ["UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR"];
const UNIT_NUMBERS: Record<string, number> = Object.fromEntries(UNITS.map((name, i) => [name, i]));
const CODES: Record<RlsStatus["code"], number> = { OK: 1, OVER_LIMIT: 2 };

/** A string field of at most `max` bytes (measured before it is decoded), or the refusal. */
function boundedString(sub: ProtoReader, what: "key" | "value", max: number): string {
  const at = sub.pos;
  const end = sub.delimited();
  if (end - sub.pos > max) throw valueTooLong(what, end - sub.pos, max);
  sub.pos = at;
  return sub.string();
}

function entry(r: ProtoReader, end: number, max: number): { key: string; value: string } {
  const sub = new ProtoReader(r.buf, r.pos, end);
  let key = "";
  let value = "";
  while (sub.more()) {
    const tag = sub.uint32();
    if (tag === 10) key = boundedString(sub, "key", max);
    else if (tag === 18) value = boundedString(sub, "value", max);
    else sub.skip(tag & 7);
  }
  return { key, value };
}

function override(r: ProtoReader, end: number): NonNullable<RlsDescriptor["limit"]> {
  const sub = new ProtoReader(r.buf, r.pos, end);
  let rpu = 0;
  let unit = 0;
  while (sub.more()) {
    const tag = sub.uint32();
    if (tag === 8) rpu = sub.uint32();
    else if (tag === 16) unit = sub.uint32() | 0;
    else sub.skip(tag & 7);
  }
  return { requests_per_unit: rpu, unit: UNITS[unit] ?? unit };
}

/** google.protobuf.UInt64Value. */
function uint64Value(r: ProtoReader, end: number): { value: number } {
  const sub = new ProtoReader(r.buf, r.pos, end);
  let value = 0;
  while (sub.more()) {
    const tag = sub.uint32();
    if (tag === 8) value = sub.uint64();
    else sub.skip(tag & 7);
  }
  return { value };
}

function descriptor(r: ProtoReader, end: number, { maxEntries, maxValueBytes }: RequestBound): RlsDescriptor {
  const sub = new ProtoReader(r.buf, r.pos, end);
  const d: RlsDescriptor = { entries: [], limit: null, hits_addend: null };
  while (sub.more()) {
    const tag = sub.uint32();
    if (tag === 10 || tag === 18 || tag === 26) {
      const to = sub.delimited();
      if (tag === 10) {
        if (d.entries.length === maxEntries) throw tooManyEntries(maxEntries);
        d.entries.push(entry(sub, to, maxValueBytes));
      } else if (tag === 18) d.limit = override(sub, to);
      else d.hits_addend = uint64Value(sub, to);
      sub.pos = to;
    } else sub.skip(tag & 7);
  }
  return d;
}

/**
 * Decodes a `RateLimitRequest` from `buf[start, end)`. Throws RequestRefused past `bound` (having
 * read no more than the bound plus one), ProtoError on malformed bytes.
 */
export function decodeRlsRequest(buf: Uint8Array, start: number, end: number, bound: RequestBound): RlsRequest {
  const r = new ProtoReader(buf, start, end);
  const request: RlsRequest = { domain: "", descriptors: [], hits_addend: 0 };
  while (r.more()) {
    const tag = r.uint32();
    if (tag === 10) request.domain = r.string();
    else if (tag === 18) {
      const to = r.delimited();
      if (request.descriptors.length === bound.maxDescriptors) throw tooManyDescriptors(bound.maxDescriptors);
      request.descriptors.push(descriptor(r, to, bound));
      r.pos = to;
    } else if (tag === 24) request.hits_addend = r.uint32();
    else r.skip(tag & 7);
  }
  return request;
}

/** Bytes of a tag and a non-zero varint (0 is proto3's default: not written). */
const uintField = (value: number) => (value === 0 ? 0 : 1 + varintSize(value));
/** Bytes of a tag and a non-empty string (of `bytes` UTF-8 bytes). */
const stringField = (bytes: number) => (bytes === 0 ? 0 : 1 + delimitedSize(bytes));

function limitSize(limit: NonNullable<RlsStatus["current_limit"]>, nameBytes: number): number {
  return uintField(limit.requests_per_unit) + uintField(UNIT_NUMBERS[limit.unit] ?? 0) + stringField(nameBytes);
}

function durationSize(d: NonNullable<RlsStatus["duration_until_reset"]>): number {
  return uintField(d.seconds) + uintField(d.nanos);
}

function statusSize(s: RlsStatus, nameBytes: number): number {
  let size = 2 + uintField(s.limit_remaining); // code is OK or OVER_LIMIT: never the default 0
  if (s.current_limit !== null) size += 1 + delimitedSize(limitSize(s.current_limit, nameBytes));
  if (s.duration_until_reset !== null) size += 1 + delimitedSize(durationSize(s.duration_until_reset));
  return size;
}

function headerSize(h: RlsHeader): number {
  return stringField(Buffer.byteLength(h.key)) + stringField(Buffer.byteLength(h.value));
}

function writeUint(w: ProtoWriter, tag: number, value: number): void {
  if (value === 0) return;
  w.varint(tag);
  w.varint(value);
}

function writeString(w: ProtoWriter, tag: number, text: string, bytes: number): void {
  if (bytes === 0) return;
  w.varint(tag);
  w.string(text, bytes);
}

/**
 * Encodes `response` as a `RateLimitResponse` into a new buffer, leaving its first `prefix` bytes
 * for the caller (the gRPC message prefix); returns the buffer and the message's length.
 */
export function encodeRlsResponse(response: RlsResponse, prefix: number): { buf: Buffer; length: number } {
  const { statuses } = response;
  const headers = response.response_headers_to_add ?? [];
  const nameBytes = statuses.map((s) => (s.current_limit === null ? 0 : Buffer.byteLength(s.current_limit.name)));
  let length = 2; // overall_code, never 0
  for (let i = 0; i < statuses.length; i++)
    length += 1 + delimitedSize(statusSize(statuses[i] as RlsStatus, nameBytes[i] as number));
  for (const h of headers) length += 1 + delimitedSize(headerSize(h));

  const w = new ProtoWriter(Buffer.allocUnsafe(prefix + length), prefix);
  writeUint(w, 8, CODES[response.overall_code]);
  for (let i = 0; i < statuses.length; i++) {
    const s = statuses[i] as RlsStatus;
    const names = nameBytes[i] as number;
    w.varint(18);
    w.varint(statusSize(s, names));
    writeUint(w, 8, CODES[s.code]);
    const limit = s.current_limit;
    if (limit !== null) {
      w.varint(18);
      w.varint(limitSize(limit, names));
      writeUint(w, 8, limit.requests_per_unit);
      writeUint(w, 16, UNIT_NUMBERS[limit.unit] ?? 0);
      writeString(w, 26, limit.name, names);
    }
    writeUint(w, 24, s.limit_remaining);
    const reset = s.duration_until_reset;
    if (reset !== null) {
      w.varint(34);
      w.varint(durationSize(reset));
      writeUint(w, 8, reset.seconds);
      writeUint(w, 16, reset.nanos);
    }
  }
  for (const h of headers) {
    w.varint(26);
    w.varint(headerSize(h));
    writeString(w, 10, h.key, Buffer.byteLength(h.key));
    writeString(w, 18, h.value, Buffer.byteLength(h.value));
  }
  return { buf: w.buf, length };
}
