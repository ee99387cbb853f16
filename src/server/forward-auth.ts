/**
 * `GET /v1/forward-auth?rule=R[&key=K][&cost=N][&tier=T][&deny=S]`, for reverse proxies (nginx
 * `auth_request`, Traefik ForwardAuth, Caddy `forward_auth`): one check, answered by status and
 * headers only. 200 with `RateLimit-Policy` / `RateLimit` when allowed; when denied 429 (or
 * `deny`, for proxies that pass on only 401/403) with `Retry-After` and the same headers, and
 * the quota-exceeded problem as body (proxies that relay the auth response show it to the
 * client). A banned key is 403 and a store failure 503 with `Retry-After`, as from the middleware
 * (src/http/answer.ts). Without `key` the client address of the forwarded request is the key.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { answerOf } from "../http/answer.ts";
import { compilePolicies, type PolicySet, writeRateLimitHeaders } from "../http/headers.ts";
import { type Policy, policiesFor } from "../http/policy.ts";
import { PROBLEM_CONTENT_TYPE } from "../http/problem.ts";
import { type AlgorithmSpec, type Decision, systemClock } from "../index.ts";
import { onStore } from "./check.ts";
import { type CheckItem, checkKeyLength, known, optionsOf, show } from "./check-items.ts";
import type { ServerContext } from "./context.ts";
import { badRequest } from "./problem.ts";

const PARAMS = new Set(["rule", "key", "cost", "tier", "deny"]);

/** Policy header values per spec list: the lists are replaced when a rule changes, so entries expire with them. */
const policyCache = new WeakMap<readonly AlgorithmSpec[], PolicySet>();

function policySet(specs: readonly AlgorithmSpec[], name: string): PolicySet {
  let set = policyCache.get(specs);
  if (set === undefined) {
    // Policy names are Structured Fields Strings (printable ASCII); other rule names get a neutral one.
    const printable = /^[\x20-\x7e]+$/.test(name) ? name : "rule";
    set = compilePolicies(policiesFor(specs, printable));
    policyCache.set(specs, set);
  }
  return set;
}

/** The request's query as one value per known parameter; repeats and unknown names are refused. */
function params(req: IncomingMessage): Map<string, string> {
  const query = new URL(req.url ?? "/", "http://localhost").searchParams;
  const out = new Map<string, string>();
  for (const [name, value] of query) {
    if (!PARAMS.has(name))
      throw badRequest("invalid-query", `unknown query parameter ${show(name)} (expected rule, key, cost, tier, deny)`);
    if (out.has(name)) throw badRequest("invalid-query", `query parameter \`${name}\` appears more than once`);
    out.set(name, value);
  }
  return out;
}

function positiveInteger(text: string | undefined, name: string, min: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  const value = /^\d{1,15}$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) {
    throw badRequest("invalid-query", `\`${name}\` must be an integer from ${min} to ${max} (got ${show(text)})`);
  }
  return value;
}

/** Handles `GET /v1/forward-auth`. */
export async function handleForwardAuth(req: IncomingMessage, res: ServerResponse, ctx: ServerContext): Promise<void> {
  const q = params(req);
  const rule = q.get("rule");
  if (rule === undefined || rule === "") throw badRequest("invalid-query", "`rule` is required, e.g. ?rule=api");
  const cost = positiveInteger(q.get("cost"), "cost", 1, Number.MAX_SAFE_INTEGER);
  const deny = positiveInteger(q.get("deny"), "deny", 400, 499) ?? 429;
  let key = q.get("key");
  if (key === undefined) {
    key = ctx.clientAddress(req);
    if (key === undefined) throw badRequest("invalid-query", "no `key` given and the request has no client address");
  } else {
    checkKeyLength(key, ctx.maxKeyLength);
  }
  const tier = q.get("tier");
  const item: CheckItem = known(
    { rule, key, ...(cost === undefined ? {} : { cost }), ...(tier === undefined ? {} : { tier }) },
    ctx,
  );
  const info = ctx.rules.get(rule);
  // `known` checked both; a reload cannot run in between (this is synchronous up to the check).
  const specs = (tier === undefined ? info?.specs : info?.tiers[tier]) as AlgorithmSpec[];
  const set = policySet(specs, rule);
  const decision: Decision = await onStore(ctx, () => ctx.service.check(item.rule, item.key, optionsOf(item)));
  ctx.metrics.decision(rule, item.tier ?? null, decision, item.key); // keys feed the status page's most limited
  if (decision.failure !== undefined) ctx.metrics.storeErrors++;

  res.setHeader("cache-control", "no-store");
  // As the middleware does: figures only when the rule decided (a fixed failure answer has none).
  const counts = decision.failure === undefined || decision.failure.policy === "fallback";
  writeRateLimitHeaders("draft-11", set, decision, counts, systemClock.now, (name, value) =>
    res.setHeader(name, value),
  );
  const answer = answerOf(decision, set.policies as Policy[], deny);
  if (answer.problem === undefined) {
    res.writeHead(200, { "content-length": 0 });
    res.end();
    return;
  }
  // The same answer as the middleware's: limited `deny` (429), banned 403, store failure 503.
  if (answer.retryAfter !== undefined) res.setHeader("retry-after", answer.retryAfter);
  const text = JSON.stringify(answer.problem);
  res.writeHead(answer.status, { "content-type": PROBLEM_CONTENT_TYPE, "content-length": Buffer.byteLength(text) });
  res.end(text);
}
