/** One request the upstream saw. */
export interface UpstreamEntry {
  at: number;
  status: number;
  job: string | undefined;
  window: number;
}

/** A running upstream simulator. */
export interface Upstream {
  url: string;
  log: UpstreamEntry[];
  close(): Promise<void>;
}

/** Starts an upstream admitting `limit` requests per `windowMs`, answering the rest 429 with `mode`'s headers. */
export function startUpstream(options: {
  limit: number;
  windowMs?: number;
  mode?: "retry-after" | "ratelimit" | "x-ratelimit";
}): Promise<Upstream>;
