/**
 * What an upstream's answer says about when to come back: `Retry-After` on a 429 or 503
 * (seconds or an HTTP date), the IETF `RateLimit` field (draft-ietf-httpapi-ratelimit-headers:
 * the draft-11 List `"name";r=0;t=30`, draft-7's `remaining=0, reset=30`, draft-6's
 * `RateLimit-Remaining`/`-Reset`), `RateLimit-Policy` (reported), and the common
 * `X-RateLimit-Remaining` / `X-RateLimit-Reset`, whose reset is epoch seconds at GitHub, epoch
 * ms elsewhere and a delta at others: told apart by size (see {@link resetToMs}). OpenAI's
 * `x-ratelimit-remaining-requests|tokens` with Go durations (`6m0s`) are read too.
 */
import { parseSfList, type SfBareItem } from "../http/structured-fields.ts";

/** Headers read by name, as a Fetch `Headers` (or undici's) offers them. */
export interface HeadersGetter {
  /** The header's value (several joined by ", "), or null/undefined when absent. */
  get(name: string): string | null | undefined;
}

/** Anything an HTTP client exposes as headers: a Fetch `Headers`, or a plain object (Node, axios, got). */
export type HeadersLike = HeadersGetter | Record<string, string | string[] | number | undefined | null>;

/** A response as `observe` accepts it: its status and its headers. */
export interface ResponseLike {
  status?: number;
  statusCode?: number;
  headers: HeadersLike;
}

/** One `RateLimit-Policy` item: `quota` units per `windowMs`. */
export interface UpstreamPolicy {
  name: string;
  quota: number;
  windowMs: number | undefined;
}

/** What the answer said. */
export interface UpstreamHint {
  /** How long to pause the key (0: no pause), clamped to `maxPauseMs`. */
  pauseMs: number;
  /** The header that asked for the pause (the longest, when several did). */
  source: "retry-after" | "ratelimit" | "x-ratelimit" | "status" | undefined;
  /** Units the upstream says are left, when it says so (the least over its policies). */
  remaining: number | undefined;
  /** Its `RateLimit-Policy`, when given. */
  policies: UpstreamPolicy[];
}

/** What a pause may be: a 429 that says nothing, and the longest any header may impose. */
export interface PauseBounds {
  defaultPauseMs: number;
  maxPauseMs: number;
}

/** A case-insensitive reader over either kind of headers. */
export function headerReader(headers: HeadersLike): (name: string) => string | undefined {
  if (typeof (headers as { get?: unknown }).get === "function") {
    const h = headers as HeadersGetter;
    // Some clients' getters answer numbers or arrays: read as text, as the plain-object form is.
    return (name) => {
      const v = h.get(name) as unknown;
      if (v === undefined || v === null) return undefined;
      return Array.isArray(v) ? v.join(", ") : String(v);
    };
  }
  const lower = new Map<string, string>();
  for (const [k, v] of Object.entries(headers as Record<string, unknown>)) {
    if (v === undefined || v === null) continue;
    lower.set(k.toLowerCase(), Array.isArray(v) ? v.join(", ") : String(v));
  }
  return (name) => lower.get(name);
}

const NUMBER = /^\s*\d+(?:\.\d+)?\s*$/;

/**
 * An instant the upstream wrote in whole seconds (an HTTP date, epoch seconds): its server
 * truncated the real instant to its second, which may end up to 999 ms later, so it is read as
 * the next whole second (a retry sent at the named second itself got a second 429 against a
 * window ending mid-second). An instant with a fraction is taken as written.
 */
function wholeSecondEnd(ms: number): number {
  return ms % 1000 === 0 ? ms + 1000 : ms;
}

/**
 * `Retry-After`: delta seconds, or an HTTP date read as the end of its second (see
 * `wholeSecondEnd`), as ms from `now`; undefined when unreadable.
 */
export function retryAfterMs(value: string, now: number): number | undefined {
  if (NUMBER.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : wholeSecondEnd(at) - now;
}

/**
 * An `X-RateLimit-Reset` value as ms from `now`. APIs disagree: GitHub and Twitter send epoch
 * seconds, some send epoch ms, others seconds left. No delta is a billion seconds (31 years) and
 * no epoch instant of this century is below it, so: ≥ 10^12 is epoch ms, ≥ 10^9 epoch seconds,
 * anything smaller seconds from now. Whole epoch seconds are read as the end of their second,
 * as an HTTP date is (a server that truncated its reset instant would be retried early).
 */
export function resetToMs(value: number, now: number): number {
  if (value >= 1e12) return value - now;
  if (value >= 1e9) return wholeSecondEnd(value * 1000) - now;
  return value * 1000;
}

const GO_DURATION = /^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$/;

/** A reset as a number (see {@link resetToMs}) or a Go duration (`1s`, `6m0s`, `20ms`, OpenAI). */
function resetValueMs(value: string, now: number): number | undefined {
  const v = value.trim();
  if (NUMBER.test(v)) return resetToMs(Number(v), now);
  const m = GO_DURATION.exec(v);
  if (m === null || v === "") return undefined;
  const [, h = "0", min = "0", s = "0", ms = "0"] = m;
  return Number(h) * 3_600_000 + Number(min) * 60_000 + Number(s) * 1000 + Number(ms);
}

function numberParam(params: ReadonlyArray<readonly [string, SfBareItem]>, name: string): number | undefined {
  const found = params.find(([k]) => k === name)?.[1];
  return typeof found === "number" ? found : undefined;
}

function nameOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "object" && value !== null && "token" in value)
    return String((value as { token: string }).token);
  return "";
}

/** Reads one answer (`status` may be undefined for headers alone) at `now`. */
export function readUpstream(
  status: number | undefined,
  headers: HeadersLike,
  now: number,
  bounds: PauseBounds,
): UpstreamHint {
  const get = headerReader(headers);
  let pause = 0;
  let source: UpstreamHint["source"];
  let remaining: number | undefined;
  const consider = (ms: number | undefined, from: NonNullable<UpstreamHint["source"]>) => {
    if (ms === undefined || !Number.isFinite(ms) || ms <= pause) return;
    pause = ms;
    source = from;
  };
  const left = (n: number) => {
    remaining = remaining === undefined ? n : Math.min(remaining, n);
  };
  // Retry-After means "come back later" only on these statuses (on a 3xx it paces a redirect).
  const retryAfter = get("retry-after");
  if ((status === 429 || status === 503) && retryAfter !== undefined)
    consider(retryAfterMs(retryAfter, now), "retry-after");

  const ratelimit = get("ratelimit");
  if (ratelimit !== undefined) {
    const items = parseSfList(ratelimit);
    const r7 = /(?:^|[,;\s])remaining=(\d+)/.exec(ratelimit);
    if (items?.some((i) => numberParam(i.params, "r") !== undefined)) {
      for (const item of items) {
        const r = numberParam(item.params, "r");
        if (r === undefined) continue;
        left(r);
        const t = numberParam(item.params, "t");
        if (r <= 0 && t !== undefined) consider(resetToMs(t, now), "ratelimit");
      }
    } else if (r7 !== null) {
      const r = Number(r7[1]);
      left(r);
      const reset = /(?:^|[,;\s])reset=(\d+)/.exec(ratelimit);
      if (r <= 0 && reset !== null) consider(resetToMs(Number(reset[1]), now), "ratelimit");
    }
  }
  const r6 = get("ratelimit-remaining");
  if (r6 !== undefined && NUMBER.test(r6)) {
    left(Number(r6));
    const reset = get("ratelimit-reset");
    // The drafts say seconds left, but GitLab sends an epoch instant here: told apart as X-RateLimit-Reset is.
    if (Number(r6) <= 0 && reset !== undefined && NUMBER.test(reset))
      consider(resetToMs(Number(reset), now), "ratelimit");
  }

  for (const suffix of ["", "-requests", "-tokens"]) {
    const x = get(`x-ratelimit-remaining${suffix}`);
    if (x === undefined || !NUMBER.test(x)) continue;
    left(Number(x));
    if (Number(x) > 0) continue;
    const after = get(`x-ratelimit-reset-after${suffix}`);
    const reset = get(`x-ratelimit-reset${suffix}`);
    if (after !== undefined && NUMBER.test(after)) consider(Number(after) * 1000, "x-ratelimit");
    else if (reset !== undefined) consider(resetValueMs(reset, now), "x-ratelimit");
  }

  if (status === 429 && pause <= 0) {
    pause = bounds.defaultPauseMs;
    source = "status";
  }
  const policies: UpstreamPolicy[] = [];
  const policy = get("ratelimit-policy");
  for (const item of policy === undefined ? [] : (parseSfList(policy) ?? [])) {
    const quota = numberParam(item.params, "q");
    if (quota !== undefined) {
      const w = numberParam(item.params, "w");
      policies.push({ name: nameOf(item.value), quota, windowMs: w === undefined ? undefined : w * 1000 });
    }
  }
  return {
    pauseMs: Math.min(bounds.maxPauseMs, Math.max(0, Math.ceil(pause))),
    source,
    remaining,
    policies,
  };
}
