/**
 * `POST /v1/check`, `/v1/peek`, `/v1/reset`, `/v1/refund`, `/v1/release` and `/v1/renew`: the body of {@link readItems},
 * answered in order with Decision JSON. Peek says what a check would say and changes nothing;
 * reset forgets the key under the rule (every tier) and answers what a peek would then say; a
 * refund gives units back (with `at`, a check's receipt, only what that check took and the
 * algorithm still counts) and answers what a peek would then say.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { STORE_FAILURE_RETRY_AFTER_SECONDS } from "../http/answer.ts";
import { type Decision, StoreError } from "../index.ts";
import { type CheckItem, leaseOptionsOf, optionsOf, readItems, refundOptionsOf } from "./check-items.ts";
import type { ServerContext } from "./context.ts";
import { checkDeadline } from "./deadline.ts";
import { HttpError } from "./problem.ts";
import { sendJson } from "./respond.ts";

/**
 * Decision as JSON-ready data: the failure, when present, as its policy and error code; `at`,
 * the instant it was decided (not enumerated on a Decision), written out as the receipt a
 * caller hands back to `/v1/refund`.
 */
export function wire(d: Decision): unknown {
  const at = d.at;
  if (d.failure === undefined) return at === undefined ? d : { ...d, at };
  const { failure, ...rest } = d;
  const code = (failure.error as { code?: string }).code;
  // The policy and code say what happened; the error text (hosts, ports) stays out of responses.
  return { ...rest, failure: { policy: failure.policy, code }, ...(at === undefined ? {} : { at }) };
}

/** Runs `run` on the store; a StoreError (policy "throw", or a failed reset) becomes a 503 problem. */
export async function onStore<T>(ctx: ServerContext, run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof StoreError) {
      ctx.metrics.storeErrors++;
      throw new HttpError(
        503,
        "store-unavailable",
        "Store unavailable",
        `the rate-limit store failed (${error.code})`,
        { code: error.code },
        { "retry-after": String(STORE_FAILURE_RETRY_AFTER_SECONDS) },
      );
    }
    throw error;
  }
}

type Op = "check" | "peek";

/** Decides every item; in-process results are plain values, Redis ones promises. */
function decideAll(ctx: ServerContext, items: CheckItem[], op: Op): Promise<Decision[]> {
  return onStore(ctx, () => {
    // On Redis all are sent at once and the client's pipeline keeps them in order, so one key's
    // checks in a batch are decided in batch order.
    const results = items.map((item) => ctx.service[op](item.rule, item.key, optionsOf(item)));
    return ctx.store.store.synchronous ? (results as Decision[]) : Promise.all(results);
  });
}

function answer(res: ServerResponse, batch: boolean, decisions: Decision[]): void {
  sendJson(res, 200, batch ? decisions.map(wire) : wire(decisions[0] as Decision));
}

/** Handles `POST /v1/check`. */
export async function handleCheck(req: IncomingMessage, res: ServerResponse, ctx: ServerContext): Promise<void> {
  const { items, batch } = await readItems(req, ctx);
  checkDeadline(req); // after the body: a stall while reading it counts against the deadline too
  const decisions = await decideAll(ctx, items, "check");
  decisions.forEach((d, i) => {
    const item = items[i] as CheckItem;
    ctx.metrics.decision(item.rule, item.tier ?? null, d, item.key);
    if (d.failure !== undefined) ctx.metrics.storeErrors++;
  });
  answer(res, batch, decisions);
}

/** Handles `POST /v1/peek`. */
export async function handlePeek(req: IncomingMessage, res: ServerResponse, ctx: ServerContext): Promise<void> {
  const { items, batch } = await readItems(req, ctx);
  answer(res, batch, await decideAll(ctx, items, "peek"));
}

/** Handles `POST /v1/refund`. */
export async function handleRefund(req: IncomingMessage, res: ServerResponse, ctx: ServerContext): Promise<void> {
  const { items, batch } = await readItems(req, ctx, "optional");
  checkDeadline(req);
  const decisions = await onStore(ctx, () => {
    const results = items.map((item) => ctx.service.refund(item.rule, item.key, refundOptionsOf(item)));
    return ctx.store.store.synchronous ? (results as Decision[]) : Promise.all(results);
  });
  answer(res, batch, decisions);
}

/**
 * `POST /v1/release` and `/v1/renew`: the lease calls of a rule with a concurrency member, for
 * the leases a `/v1/check` took (its `at` is their receipt). A release frees them and answers
 * what a peek then says; a renewal starts their `leaseMs` again and answers with their new
 * receipt `at`, or denied (changing nothing) when they are no longer held. A rule without a
 * concurrency member holds no leases: 400.
 */
function leaseHandler(op: "release" | "renew") {
  return async (req: IncomingMessage, res: ServerResponse, ctx: ServerContext): Promise<void> => {
    const { items, batch } = await readItems(req, ctx, "required");
    checkDeadline(req);
    const decisions = await onStore(ctx, () => {
      const results = items.map((item) => ctx.service[op](item.rule, item.key, leaseOptionsOf(item)));
      return ctx.store.store.synchronous ? (results as Decision[]) : Promise.all(results);
    });
    answer(res, batch, decisions);
  };
}

/** Handles `POST /v1/release`. */
export const handleRelease = leaseHandler("release");

/** Handles `POST /v1/renew`. */
export const handleRenew = leaseHandler("renew");

/** Handles `POST /v1/reset`. */
export async function handleReset(req: IncomingMessage, res: ServerResponse, ctx: ServerContext): Promise<void> {
  const { items, batch } = await readItems(req, ctx);
  checkDeadline(req);
  await onStore(ctx, () => Promise.all(items.map((item) => ctx.service.reset(item.rule, item.key))));
  answer(res, batch, await decideAll(ctx, items, "peek"));
}
