/**
 * The RLS messages as the server's codec (rls-codec.ts) hands them over and takes them back, in
 * the shape @grpc/proto-loader gives with `{ keepCase, longs: Number, enums: String, defaults }`
 * (the test client's): proto field names (snake_case), 64-bit numbers as JS numbers, enums as
 * names, defaults filled in (absent messages are null).
 */

/** A descriptor of a request. */
export interface RlsDescriptor {
  entries: Array<{ key: string; value: string }>;
  /** Envoy's per-descriptor limit override (`RateLimitOverride`), or null. */
  limit: { requests_per_unit: number; unit: string | number } | null;
  /** google.protobuf.UInt64Value: null when unset, so 0 can mean "only look". */
  hits_addend: { value: number } | null;
}

/** `RateLimitRequest`. */
export interface RlsRequest {
  domain: string;
  descriptors: RlsDescriptor[];
  /** 0 when unset (proto3): counts as 1. */
  hits_addend: number;
}

/** `RateLimitResponse.DescriptorStatus`. */
export interface RlsStatus {
  code: "OK" | "OVER_LIMIT";
  current_limit: { requests_per_unit: number; unit: string; name: string } | null;
  limit_remaining: number;
  duration_until_reset: { seconds: number; nanos: number } | null;
}

/** `HeaderValue` (sluice sets key and value). */
export interface RlsHeader {
  key: string;
  value: string;
}

/** `RateLimitResponse` (the fields sluice sets). */
export interface RlsResponse {
  overall_code: "OK" | "OVER_LIMIT";
  statuses: RlsStatus[];
  /** Filled only under `--envoy-response-headers`. */
  response_headers_to_add?: RlsHeader[];
}
