/**
 * The bound on a `RateLimitRequest`, checked on its wire bytes before protobuf decodes it: a
 * request of 100,000 descriptors is refused after a scan of its field tags (microseconds per
 * descriptor, no objects made), so it never reaches the decoder or the store and the event loop
 * stays free for everyone else.
 */

/** Most descriptors in one request, and most entries in one descriptor. */
export interface RequestBound {
  maxDescriptors: number;
  maxEntries: number;
}

/** Default descriptors per request: the JSON API's default batch bound. */
export const DEFAULT_MAX_DESCRIPTORS = 1000;
/** Default entries per descriptor (Envoy's actions make a handful). */
export const DEFAULT_MAX_ENTRIES = 64;
/** Default largest gRPC message accepted, in bytes (Envoy's requests are a few hundred bytes). */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;

/** Reads a varint at `at`; returns [value, next offset], or undefined when truncated. */
function varint(buf: Uint8Array, at: number): [number, number] | undefined {
  let value = 0;
  let scale = 1;
  for (let i = at; i < buf.length && i < at + 10; i++) {
    const byte = buf[i] as number;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, i + 1];
    scale *= 128;
  }
  return undefined;
}

/**
 * Counts the occurrences of length-delimited field `field` in the message `buf[start, end)`,
 * calling `each` on each one's bytes; stops past `max` (returns max + 1). Malformed bytes end the
 * scan quietly: the decoder that runs next reports them.
 */
function countField(
  buf: Uint8Array,
  start: number,
  end: number,
  field: number,
  max: number,
  each?: (from: number, to: number) => boolean,
): number {
  let count = 0;
  let at = start;
  while (at < end) {
    const tag = varint(buf, at);
    if (tag === undefined) return count;
    at = tag[1];
    const wire = tag[0] % 8;
    if (wire === 0) {
      const v = varint(buf, at);
      if (v === undefined) return count;
      at = v[1];
    } else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const len = varint(buf, at);
      if (len === undefined) return count;
      const from = len[1];
      at = from + len[0];
      if (Math.floor(tag[0] / 8) === field) {
        if (++count > max) return count;
        if (each !== undefined && !each(from, Math.min(at, end))) return count;
      }
    } else return count; // groups (3, 4) are not in this message: let the decoder say so
  }
  return count;
}

/** Why the request in `buf` is refused, or undefined when it is within `bound`. */
export function refuseRequest(buf: Uint8Array, bound: RequestBound): string | undefined {
  let entries = 0;
  let refusal: string | undefined;
  const descriptors = countField(buf, 0, buf.length, 2, bound.maxDescriptors, (from, to) => {
    entries = countField(buf, from, to, 1, bound.maxEntries);
    if (entries > bound.maxEntries)
      refusal = `a descriptor has more than ${bound.maxEntries} entries (the service's bound per descriptor)`;
    return refusal === undefined;
  });
  if (descriptors > bound.maxDescriptors)
    return `the request has more than ${bound.maxDescriptors} descriptors (the service's bound per request)`;
  return refusal;
}
