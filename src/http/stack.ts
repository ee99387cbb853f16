/**
 * Stacked limiters: several sluice middlewares (or another library) on one route must all
 * reach the client. draft-11's `RateLimit-Policy` / `RateLimit` are Structured Fields Lists,
 * so a later middleware appends its members to what an earlier one set (renaming its own
 * members when a name is already taken), and `Retry-After` keeps the longest wait.
 */
import type { Decision } from "../algorithms/decision.ts";
import { compilePolicies, type PolicySet, type SetHeader } from "./headers.ts";
import { parseSfList } from "./structured-fields.ts";

/** Reads a response header already set (undefined when absent). */
export type GetHeader = (name: string) => string | undefined;

/**
 * The member names of a draft-11 list such as `"burst";q=100;w=60, "daily";q=5000;w=86400`
 * (Strings or Tokens; members of other kinds have no name), parsed as a full Structured Fields
 * List (express-rate-limit's `"erl"; q=100; w=60; pk=:…:` included), or undefined when the
 * value is not a List.
 */
export function listNames(value: string): string[] | undefined {
  const members = parseSfList(value);
  if (members === undefined) return undefined;
  const names: string[] = [];
  for (const { value: item } of members) {
    if (typeof item === "string") names.push(item);
    else if (typeof item === "object" && item !== null && "token" in item) names.push(item.token);
  }
  return names;
}

/** `set`, renamed so its names are distinct from `taken` (`name-2`, `name-3`, …); itself when already distinct. */
export function distinctFrom(set: PolicySet, taken: readonly string[]): PolicySet {
  if (!set.policies.some((p) => taken.includes(p.name))) return set;
  const used = new Set(taken);
  const policies = set.policies.map((p) => {
    let name = p.name;
    for (let n = 2; used.has(name); n++) name = `${p.name}-${n}`;
    used.add(name);
    return { ...p, name };
  });
  return compilePolicies(policies);
}

/**
 * A header setter that appends to list fields already on the response and keeps the longest
 * `Retry-After`, for draft-11 (the only layout that can carry several limits; the older ones
 * are overwritten by the last middleware).
 */
export function stackingSetter(set: SetHeader, get: GetHeader): SetHeader {
  return (name, value) => {
    const lower = name.toLowerCase();
    const existing =
      lower === "ratelimit-policy" || lower === "ratelimit" || lower === "retry-after" ? get(name) : undefined;
    if (existing === undefined || existing === "") return set(name, value);
    if (lower === "retry-after") {
      const before = Number(existing);
      return set(name, Number.isFinite(before) && before > Number(value) ? existing : value);
    }
    set(name, listNames(existing) === undefined ? value : `${existing}, ${value}`);
  };
}

/** The decision to expose on the request when several middlewares decided: a denial, else the least remaining. */
export function tighter(existing: Decision | undefined, next: Decision): Decision {
  if (existing === undefined) return next;
  if (existing.allowed !== next.allowed) return existing.allowed ? next : existing;
  return existing.remaining < next.remaining ? existing : next;
}
