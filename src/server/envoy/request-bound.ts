/**
 * The bound on a `RateLimitRequest`: most descriptors per request and entries per descriptor.
 * The decoder (rls-codec.ts) enforces it as it reads, so a request of 100,000 descriptors is
 * refused after the first 1,001 are read (microseconds), never reaching the store, and the event
 * loop stays free for everyone else.
 */

/** Most descriptors in one request, entries in one descriptor, and bytes in an entry's key or value. */
export interface RequestBound {
  maxDescriptors: number;
  maxEntries: number;
  /** `--max-key-length` (key-length.ts): the bound on a JSON key applies to each entry's key and value. */
  maxValueBytes: number;
}

/** Default descriptors per request: the JSON API's default batch bound. */
export const DEFAULT_MAX_DESCRIPTORS = 1000;
/** Default entries per descriptor (Envoy's actions make a handful). */
export const DEFAULT_MAX_ENTRIES = 64;
/** Default largest gRPC message accepted, in bytes (Envoy's requests are a few hundred bytes). */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;

/** A request past its bound (answered RESOURCE_EXHAUSTED, nothing decided). */
export class RequestRefused extends Error {
  override readonly name = "RequestRefused";
}

/** The refusal of a request with more than `max` descriptors. */
export function tooManyDescriptors(max: number): RequestRefused {
  return new RequestRefused(`the request has more than ${max} descriptors (the service's bound per request)`);
}

/** The refusal of an entry whose key or value is longer than `max` UTF-8 bytes. */
export function valueTooLong(what: "key" | "value", bytes: number, max: number): RequestRefused {
  return new RequestRefused(
    `a descriptor entry's ${what} is ${bytes} bytes, longer than ${max} (the service's bound, --max-key-length)`,
  );
}

/** The refusal of a descriptor with more than `max` entries. */
export function tooManyEntries(max: number): RequestRefused {
  return new RequestRefused(`a descriptor has more than ${max} entries (the service's bound per descriptor)`);
}
