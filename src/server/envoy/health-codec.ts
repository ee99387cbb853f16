/**
 * grpc.health.v1's two messages (health.proto), by hand: `HealthCheckRequest.service` in,
 * `HealthCheckResponse.status` out.
 */
import { ProtoReader } from "./proto-reader.ts";

/** `HealthCheckResponse.ServingStatus` values sluice answers. */
export type ServingStatus = "SERVING" | "NOT_SERVING";

/** The `service` named by a `HealthCheckRequest` in `buf[start, end)` ("" for the whole server). */
export function decodeHealthRequest(buf: Uint8Array, start: number, end: number): string {
  const r = new ProtoReader(buf, start, end);
  let service = "";
  while (r.more()) {
    const tag = r.uint32();
    if (tag === 10) service = r.string();
    else r.skip(tag & 7);
  }
  return service;
}

/** A `HealthCheckResponse` after `prefix` bytes left for the caller; returns the buffer and the message's length. */
export function encodeHealthResponse(status: ServingStatus, prefix: number): { buf: Buffer; length: number } {
  const buf = Buffer.alloc(prefix + 2);
  buf[prefix] = 8; // field 1, varint
  buf[prefix + 1] = status === "SERVING" ? 1 : 2;
  return { buf, length: 2 };
}
