/**
 * `POST /v1/check`: `{ rule, key, cost?, tier? }` or an array of them, answered in order with
 * Decision JSON. Every item is validated (shape, rule, tier) before any is decided, so a bad
 * request changes no state, not even in a batch.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Decision, StoreError } from "../index.ts";
import { readJson } from "./body.ts";
import type { ServerContext } from "./context.ts";
import { badRequest, HttpError } from "./problem.ts";
import { sendJson } from "./respond.ts";

interface CheckItem {
  rule: string;
  key: string;
  cost?: number;
  tier?: string;
}

const FIELDS = new Set(["rule", "key", "cost", "tier"]);

function show(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

function validateItem(raw: unknown, ctx: ServerContext, at: string, extra: Record<string, unknown>): CheckItem {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw badRequest("invalid-check", `${at}must be an object { rule, key, cost?, tier? } (got ${show(raw)})`, extra);
  }
  const item = raw as Record<string, unknown>;
  for (const field of Object.keys(item)) {
    if (!FIELDS.has(field))
      throw badRequest("invalid-check", `${at}unknown field \`${field}\` (expected rule, key, cost, tier)`, extra);
  }
  const { rule, key, cost, tier } = item;
  if (typeof rule !== "string" || rule === "")
    throw badRequest("invalid-check", `${at}\`rule\` must be a non-empty string (got ${show(rule)})`, extra);
  if (typeof key !== "string")
    throw badRequest("invalid-check", `${at}\`key\` must be a string (got ${show(key)})`, extra);
  if (cost !== undefined && (typeof cost !== "number" || !Number.isSafeInteger(cost) || cost < 1)) {
    throw badRequest("invalid-check", `${at}\`cost\` must be a positive integer (got ${show(cost)})`, extra);
  }
  if (tier !== undefined && typeof tier !== "string")
    throw badRequest("invalid-check", `${at}\`tier\` must be a string (got ${show(tier)})`, extra);
  const info = ctx.rules.get(rule);
  if (info === undefined) {
    throw new HttpError(404, "unknown-rule", "Unknown rule", `${at}unknown rule ${show(rule)}`, { rule, ...extra });
  }
  if (tier !== undefined && !Object.hasOwn(info.tiers, tier)) {
    const known = Object.keys(info.tiers).map(show).join(", ") || "none";
    throw badRequest("unknown-tier", `${at}rule ${show(rule)} has no tier ${show(tier)} (tiers: ${known})`, extra);
  }
  const out: CheckItem = { rule, key };
  if (cost !== undefined) out.cost = cost as number;
  if (tier !== undefined) out.tier = tier;
  return out;
}

/** Decision as JSON-ready data: the failure, when present, as its policy and error code. */
function wire(d: Decision): unknown {
  if (d.failure === undefined) return d;
  const { failure, ...rest } = d;
  const code = (failure.error as { code?: string }).code;
  // The policy and code say what happened; the error text (hosts, ports) stays out of responses.
  return { ...rest, failure: { policy: failure.policy, code } };
}

/** Handles `POST /v1/check`. */
export async function handleCheck(req: IncomingMessage, res: ServerResponse, ctx: ServerContext): Promise<void> {
  const body = await readJson(req, ctx.maxBodyBytes);
  const batch = Array.isArray(body);
  const raw = batch ? body : [body];
  if (batch && raw.length === 0) throw badRequest("invalid-check", "a batch must hold at least one check");
  if (raw.length > ctx.maxBatch) {
    throw new HttpError(
      413,
      "batch-too-large",
      "Content too large",
      `a batch may hold at most ${ctx.maxBatch} checks (got ${raw.length})`,
    );
  }
  const items = raw.map((item, i) => validateItem(item, ctx, batch ? `[${i}]: ` : "", batch ? { index: i } : {}));
  const options = (item: CheckItem) => {
    const o: { cost?: number; tier?: string } = {};
    if (item.cost !== undefined) o.cost = item.cost;
    if (item.tier !== undefined) o.tier = item.tier;
    return o;
  };
  let decisions: Decision[];
  try {
    // In-process checks return plain values; on Redis all are sent at once and the client's
    // pipeline keeps them in order, so one key's checks in a batch are decided in batch order.
    const results = items.map((item) => ctx.service.check(item.rule, item.key, options(item)));
    decisions = ctx.store.store.synchronous ? (results as Decision[]) : await Promise.all(results);
  } catch (error) {
    if (error instanceof StoreError) {
      ctx.metrics.storeErrors++;
      throw new HttpError(
        503,
        "store-unavailable",
        "Store unavailable",
        `the rate-limit store failed (${error.code})`,
        { code: error.code },
      );
    }
    throw error;
  }
  decisions.forEach((d, i) => {
    const item = items[i] as CheckItem;
    ctx.metrics.decision(item.rule, d.allowed, item.key);
    if (d.failure !== undefined) ctx.metrics.storeErrors++;
  });
  sendJson(res, 200, batch ? decisions.map(wire) : wire(decisions[0] as Decision));
}
