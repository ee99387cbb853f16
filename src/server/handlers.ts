/** The read-only endpoints: rules, health, metrics, status (JSON) and the status page. */
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { describeRule } from "../config/describe.ts";
import { describeEnvoy, type EnvoyDescriptorInfo } from "../config/envoy/describe.ts";
import type { EnvoyConfig } from "../config/envoy/model.ts";
import { systemClock } from "../index.ts";
import type { ServerContext } from "./context.ts";
import type { ReloadProgress } from "./envoy/envoy-service.ts";
import type { Gauge } from "./metrics.ts";
import { sendJson, sendText } from "./respond.ts";
import { STORE_GAUGE_HELP } from "./store.ts";

const STATUS_PAGE = readFileSync(new URL("./status.html", import.meta.url));

/** `GET /v1/rules`: every rule with its normalised specs, tiers and a summary in words; Envoy domains and their descriptors. */
export function handleRules(_req: IncomingMessage, res: ServerResponse, ctx: ServerContext): void {
  sendJson(res, 200, { rules: [...ctx.rules.values()], envoy: envoyView(ctx, Number.POSITIVE_INFINITY) });
}

/**
 * Descriptors listed by /v1/status, over all domains (the page polls it every few seconds): a
 * config of 20,000 descriptors made each answer 4 MB. `descriptorCount` says how many a domain
 * has, `domainCount` how many domains there are, and /v1/rules lists them all.
 */
export const STATUS_DESCRIPTORS = 100;

/**
 * Rules listed by /v1/status: the busiest (most decisions since start), in config order. Each
 * carries 300 s of per-second figures per tier, so 20,000 rules would make each answer tens of
 * megabytes. `ruleCount` says how many there are; /v1/rules lists them all.
 */
export const STATUS_RULES = 100;

/** Each config described once: it never changes, a reload makes a new one. */
const described = new WeakMap<EnvoyConfig, ReturnType<typeof describeEnvoy>>();

/**
 * The Envoy config as listed by /v1/rules (every descriptor) and /v1/status (the first `most` of
 * each domain): per domain its limited descriptor paths and their count; and the reload in
 * progress, if any.
 */
function envoyView(
  ctx: ServerContext,
  most: number,
): {
  domainCount: number;
  domains: Array<{ domain: string; descriptorCount: number; descriptors: EnvoyDescriptorInfo[] }>;
  reloading: ReloadProgress | null;
} | null {
  const envoy = ctx.envoy;
  if (envoy === undefined) return null;
  const config = envoy.state.config;
  let domains = described.get(config);
  if (domains === undefined) {
    domains = describeEnvoy(config);
    described.set(config, domains);
  }
  // `most` descriptors in all, and a domain listed only while some are left for it (at least one
  // each), so neither many descriptors nor many domains of one each make the answer long.
  let left = most;
  const shown: Array<{ domain: string; descriptorCount: number; descriptors: EnvoyDescriptorInfo[] }> = [];
  for (const { domain, descriptors } of domains) {
    if (left <= 0) break;
    const listed = descriptors.length > left ? descriptors.slice(0, left) : descriptors;
    left -= Math.max(1, listed.length);
    shown.push({ domain, descriptorCount: descriptors.length, descriptors: listed });
  }
  return { domainCount: domains.length, domains: shown, reloading: envoy.reloading ?? null };
}

/** When the rules file was last loaded or tried, as an ISO instant. */
function reloadedAt(ctx: ServerContext): string {
  return new Date(ctx.metrics.lastReloadAt * 1000).toISOString();
}

/** `GET /healthz`: 200 when the store answers, 503 when it does not. */
export async function handleHealth(_req: IncomingMessage, res: ServerResponse, ctx: ServerContext): Promise<void> {
  // /healthz is open even when a token is set, so it says what is wrong but not where: no file
  // paths, hosts or error texts (those are in the log and behind the token at /v1/status).
  const config = {
    lastReloadOk: ctx.reloader?.lastError === undefined && ctx.envoy?.lastError === undefined,
    lastReloadAt: reloadedAt(ctx),
  };
  try {
    await ctx.store.ping();
    sendJson(res, 200, { status: "ok", store: ctx.store.kind, rules: ctx.rules.size, config });
  } catch {
    sendJson(res, 503, { status: "unavailable", store: ctx.store.kind, config });
  }
}

/** `GET /metrics`: Prometheus text. */
export function handleMetrics(_req: IncomingMessage, res: ServerResponse, ctx: ServerContext): void {
  const gauges: Gauge[] = [
    { name: "sluice_rules", help: "Rules currently loaded.", type: "gauge", value: ctx.rules.size },
    {
      name: "sluice_uptime_seconds",
      help: "Seconds since the service started.",
      type: "gauge",
      value: (systemClock.now() - ctx.startedAt) / 1000,
    },
  ];
  for (const [name, value] of Object.entries(ctx.store.stats())) {
    gauges.push({
      name,
      help:
        STORE_GAUGE_HELP[name] ??
        `In-process store: ${name.replace("sluice_store_", "").replace("_total", "")} (see MemoryStore.stats()).`,
      type: name.endsWith("_total") ? "counter" : "gauge",
      value,
    });
  }
  const envoy = ctx.envoy?.state.metrics.render() ?? "";
  const shed = ctx.shed?.prometheus() ?? "";
  sendText(res, 200, "text/plain; version=0.0.4; charset=utf-8", ctx.metrics.render(gauges) + envoy + shed);
}

/**
 * `GET /v1/status`: what the status page polls: per rule its totals since start (the counters of
 * /metrics), and per tier (`byTier`, the rule's own spec first as tier null) its totals,
 * admitted / denied / failed per second over the last 5 minutes (`series`), the keys denied
 * most right now with their denial rate (`topDenied`), and the keys the store holds for it
 * (`keys`, null where the store cannot count them; `keysSummarised`: a lower bound).
 */
export function handleStatus(_req: IncomingMessage, res: ServerResponse, ctx: ServerContext): void {
  const rules = busiestRules(ctx, STATUS_RULES).map((r) => {
    const [allowed, denied, failure] = ctx.metrics.decisions.get(r.name) ?? [0, 0, 0];
    const byTier = [
      { ...ctx.metrics.activity.view(r.name, null), summary: r.summary, ...keysOf(ctx, r.name, undefined) },
      ...Object.entries(r.tiers).map(([tier, specs]) => ({
        ...ctx.metrics.activity.view(r.name, tier),
        summary: describeRule(specs),
        ...keysOf(ctx, r.name, tier),
      })),
    ];
    return { name: r.name, summary: r.summary, tiers: Object.keys(r.tiers), allowed, denied, failure, byTier };
  });
  sendJson(res, 200, {
    uptimeSeconds: Math.floor((systemClock.now() - ctx.startedAt) / 1000),
    store: { kind: ctx.store.kind, where: ctx.store.where, tiers: ctx.store.stats() },
    config: {
      path: ctx.reloader?.path ?? null,
      lastReloadOk: ctx.reloader?.lastError === undefined,
      lastReloadAt: reloadedAt(ctx),
      error: ctx.reloader?.lastError ?? null,
      reloads: ctx.metrics.reloads,
    },
    storeErrors: ctx.metrics.storeErrors,
    ruleCount: ctx.rules.size,
    rules,
    envoy: envoyView(ctx, STATUS_DESCRIPTORS),
  });
}

/** The `most` rules with the most decisions since start (all of them when there are no more), in config order. */
function busiestRules(ctx: ServerContext, most: number) {
  const all = [...ctx.rules.values()];
  if (all.length <= most) return all;
  const total = (name: string) => {
    const [a, d, f] = ctx.metrics.decisions.get(name) ?? [0, 0, 0];
    return a + d + f;
  };
  const kept = new Set(
    all
      .map((r, i): [number, number] => [total(r.name), i])
      .sort((x, y) => y[0] - x[0] || x[1] - y[1])
      .slice(0, most)
      .map(([, i]) => i),
  );
  return all.filter((_, i) => kept.has(i));
}

/**
 * A tier's keys as the store knows them: `keys` (null: the store cannot count them, as on Redis)
 * and `keysSummarised` (some live only in the in-process store's summary: `keys` is a lower bound).
 */
function keysOf(ctx: ServerContext, rule: string, tier: string | undefined) {
  const known = ctx.store.keysOf(rule, tier);
  return { keys: known?.keys ?? null, keysSummarised: known?.summarised ?? false };
}

/** `GET /`: the status page (static; it polls /healthz, and /v1/status with the token if one is set). */
export function handlePage(_req: IncomingMessage, res: ServerResponse): void {
  sendText(res, 200, "text/html; charset=utf-8", STATUS_PAGE);
}

/** The page's icon (a sluice gate), small enough to inline here. */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2e8b57"/>' +
  '<path d="M4 3v10M8 3v6M12 3v10" stroke="#fff" stroke-width="2"/></svg>';

/**
 * `GET /favicon.ico`: the icon, as SVG (browsers go by the content type, not the name), cached
 * for a day: a browser asks for it on every page load, and a 404 there is an error in its console.
 */
export function handleFavicon(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, {
    "content-type": "image/svg+xml",
    "cache-control": "public, max-age=86400",
    "content-length": Buffer.byteLength(FAVICON),
  });
  res.end(FAVICON);
}
