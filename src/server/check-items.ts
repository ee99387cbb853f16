/**
 * The body shared by `POST /v1/check`, `/v1/peek`, `/v1/reset` and `/v1/refund`:
 * `{ rule, key, cost?, tier? }` (a refund also `at?`, its receipt) or an array of them. Every item is validated (shape, key length, rule, tier) before any is
 * used, so a bad request changes no state, not even in a batch.
 */
import type { IncomingMessage } from "node:http";
import type { CheckOptions } from "../index.ts";
import { readJson } from "./body.ts";
import type { ServerContext } from "./context.ts";
import { badRequest, HttpError } from "./problem.ts";

/** One validated item. */
export interface CheckItem {
  rule: string;
  key: string;
  cost?: number;
  tier?: string;
  /** Refunds only: the refunded check's `at` (its receipt). */
  at?: number;
}

const FIELDS = new Set(["rule", "key", "cost", "tier"]);
const RECEIPT_FIELDS = new Set([...FIELDS, "at"]);

/** Whether an item carries a receipt `at`: none (check, peek, reset), optional (refund), required (release, renew). */
export type Receipt = "none" | "optional" | "required";

/** A value as JSON for an error message, cut short: messages echo input, never all of it. */
export function show(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = Array.isArray(value) ? "an array" : typeof value; // too deep to print: say what it is
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Throws a 400 when `key` is longer than the service's limit (UTF-8 bytes). */
export function checkKeyLength(key: string, max: number, at = "", extra: Record<string, unknown> = {}): void {
  // Every character is at most 3 UTF-8 bytes (a surrogate pair is 4 for 2): most keys skip the count.
  if (key.length * 3 <= max) return;
  const bytes = Buffer.byteLength(key, "utf8");
  if (bytes <= max) return;
  throw badRequest("key-too-long", `${at}\`key\` must be at most ${max} bytes (got ${bytes} bytes)`, {
    maxKeyLength: max,
    ...extra,
  });
}

/** Validates one item against the running rules; `at` prefixes messages with the batch index. */
export function validateItem(
  raw: unknown,
  ctx: ServerContext,
  at: string,
  extra: Record<string, unknown>,
  receipt: Receipt = "none",
): CheckItem {
  const fields = receipt === "none" ? FIELDS : RECEIPT_FIELDS;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    const shape =
      receipt === "none"
        ? "{ rule, key, cost?, tier? }"
        : `{ rule, key, cost?, tier?, ${receipt === "required" ? "at" : "at?"} }`;
    throw badRequest("invalid-check", `${at}must be an object ${shape} (got ${show(raw)})`, extra);
  }
  const item = raw as Record<string, unknown>;
  for (const field of Object.keys(item)) {
    if (!fields.has(field))
      throw badRequest(
        "invalid-check",
        `${at}unknown field ${show(field)} (expected ${[...fields].join(", ")})`,
        extra,
      );
  }
  const stamp = item.at;
  if ((stamp !== undefined || receipt === "required") && (typeof stamp !== "number" || !Number.isFinite(stamp))) {
    throw badRequest(
      "invalid-check",
      `${at}\`at\` must be a finite instant in ms (a check's \`at\`) (got ${show(stamp)})`,
      extra,
    );
  }
  const { rule, key, cost, tier } = item;
  if (typeof rule !== "string" || rule === "")
    throw badRequest("invalid-check", `${at}\`rule\` must be a non-empty string (got ${show(rule)})`, extra);
  if (typeof key !== "string")
    throw badRequest("invalid-check", `${at}\`key\` must be a string (got ${show(key)})`, extra);
  checkKeyLength(key, ctx.maxKeyLength, at, extra);
  if (cost !== undefined && (typeof cost !== "number" || !Number.isSafeInteger(cost) || cost < 1)) {
    throw badRequest("invalid-check", `${at}\`cost\` must be a positive integer (got ${show(cost)})`, extra);
  }
  if (tier !== undefined && typeof tier !== "string")
    throw badRequest("invalid-check", `${at}\`tier\` must be a string (got ${show(tier)})`, extra);
  return known(
    {
      rule,
      key,
      ...(cost === undefined ? {} : { cost }),
      ...(tier === undefined ? {} : { tier }),
      ...(stamp === undefined ? {} : { at: stamp as number }),
    },
    ctx,
    at,
    extra,
  );
}

/** Checks that the item's rule and tier exist (404 / 400 otherwise); returns the item. */
export function known(item: CheckItem, ctx: ServerContext, at = "", extra: Record<string, unknown> = {}): CheckItem {
  const info = ctx.rules.get(item.rule);
  if (info === undefined) {
    throw new HttpError(404, "unknown-rule", "Unknown rule", `${at}unknown rule ${show(item.rule)}`, {
      rule: item.rule,
      ...extra,
    });
  }
  if (item.tier !== undefined && !Object.hasOwn(info.tiers, item.tier)) {
    // Names no other tier: a caller probing tier names must not learn which exist (the operator
    // sees them in the rules file, /v1/rules and check-config).
    throw badRequest("unknown-tier", `${at}rule ${show(item.rule)} has no tier ${show(item.tier)}`, extra);
  }
  return item;
}

/** The service options of an item. */
export function optionsOf(item: CheckItem): CheckOptions {
  const o: CheckOptions = {};
  if (item.cost !== undefined) o.cost = item.cost;
  if (item.tier !== undefined) o.tier = item.tier;
  return o;
}

/** The service options of a refund item (its receipt too). */
export function refundOptionsOf(item: CheckItem): CheckOptions & { at?: number } {
  const o: CheckOptions & { at?: number } = optionsOf(item);
  if (item.at !== undefined) o.at = item.at;
  return o;
}

/** The service options of a lease call's item (its receipt, required by validation). */
export function leaseOptionsOf(item: CheckItem): CheckOptions & { at: number } {
  return { ...optionsOf(item), at: item.at as number };
}

/** Reads and validates the body: the items, and whether it was a batch (an array). */
export async function readItems(
  req: IncomingMessage,
  ctx: ServerContext,
  receipt: Receipt = "none",
): Promise<{ items: CheckItem[]; batch: boolean }> {
  const body = await readJson(req, ctx.maxBodyBytes);
  const batch = Array.isArray(body);
  const raw: unknown[] = batch ? body : [body];
  if (batch && raw.length === 0) throw badRequest("invalid-check", "a batch must hold at least one check");
  if (raw.length > ctx.maxBatch) {
    throw new HttpError(
      413,
      "batch-too-large",
      "Content too large",
      `a batch may hold at most ${ctx.maxBatch} checks (got ${raw.length})`,
    );
  }
  const items = raw.map((item, i) =>
    validateItem(item, ctx, batch ? `[${i}]: ` : "", batch ? { index: i } : {}, receipt),
  );
  return { items, batch };
}
