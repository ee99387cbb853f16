/**
 * The HTTP API as an OpenAPI 3.1 document, served at `GET /openapi.json`. Kept as code beside
 * the router: test/server/openapi.test.ts fails when a route is served but not described here,
 * or described but not served.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

const json = (schema: object) => ({ "application/json": { schema } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const problem = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: ref("Problem") } },
});

/** What a check and a refund both name: the rule, the key, the cost and the tier. */
const REQUEST_FIELDS = {
  rule: { type: "string", minLength: 1 },
  key: { type: "string", description: "At most `--max-key-length` UTF-8 bytes (default 512)." },
  cost: { type: "integer", minimum: 1, default: 1 },
  tier: { type: "string" },
};

/** A health endpoint (two paths answer alike): open to all, 200 or 503 with the same body. */
const health = (operationId: string, summary: string) => ({
  get: {
    operationId,
    summary,
    security: [],
    responses: {
      "200": { description: "The store answers.", content: json(ref("Health")) },
      "503": { description: "The store does not answer.", content: json(ref("Health")) },
    },
  },
});

/** Responses every token-protected endpoint may give. */
const AUTH_ERRORS = {
  "401": problem("`--token` is set and the request has no valid `Authorization: Bearer` header (`unauthorized`)."),
};

const CHECK_BODY = {
  required: true,
  content: json({ oneOf: [ref("CheckRequest"), { type: "array", minItems: 1, items: ref("CheckRequest") }] }),
};

const REFUND_BODY = {
  required: true,
  content: json({ oneOf: [ref("RefundRequest"), { type: "array", minItems: 1, items: ref("RefundRequest") }] }),
};

const LEASE_BODY = {
  required: true,
  content: json({ oneOf: [ref("LeaseRequest"), { type: "array", minItems: 1, items: ref("LeaseRequest") }] }),
};

const DECISIONS = {
  description: "A Decision, or an array of Decisions in request order when the body was an array.",
  content: json({ oneOf: [ref("Decision"), { type: "array", items: ref("Decision") }] }),
};

const BODY_ERRORS = {
  "400": problem(
    "Invalid input: `invalid-json` (malformed, empty or nested deeper than 32), `invalid-check`, `unknown-tier`, `key-too-long` (past `--max-key-length`, with `maxKeyLength`). A batch problem carries the item's `index`; nothing in a refused batch is decided.",
  ),
  ...AUTH_ERRORS,
  "404": problem("`unknown-rule`."),
  "413": problem("`body-too-large` (past `--max-body`) or `batch-too-large` (past `--max-batch`)."),
  "415": problem("`unsupported-media-type`: the body must be sent as `Content-Type: application/json`."),
  "503": problem("`store-unavailable`: Redis failed and `--on-store-error throw` is set."),
};

/** `Sluice-Deadline` on check, reset and refund (src/server/deadline.ts). */
const DEADLINE = {
  parameters: [
    {
      name: "Sluice-Deadline",
      in: "header",
      required: false,
      description:
        "Epoch milliseconds after which the caller no longer waits (sluice/client sends it): a call the service would start deciding later is refused with 504 and nothing is counted.",
      schema: { type: "string", pattern: "^[0-9]{1,16}$" },
    },
  ],
  responses: { "504": problem("`deadline-passed`: the caller's `Sluice-Deadline` passed first; nothing was counted.") },
};

const RATE_LIMIT_HEADERS = {
  "RateLimit-Policy": {
    description:
      'draft-ietf-httpapi-ratelimit-headers-11, e.g. `"api";q=20;w=2` (one member per member of a composite rule).',
    schema: { type: "string" },
  },
  RateLimit: {
    description: 'draft-ietf-httpapi-ratelimit-headers-11, e.g. `"api";r=19;t=1` (absent when the store failed).',
    schema: { type: "string" },
  },
};

/** The document (OpenAPI 3.1). */
export const OPENAPI = {
  openapi: "3.1.0",
  info: {
    title: "sluice serve",
    version: "0.1.0",
    summary: "Rate-limit decisions over HTTP: named rules from a rules file, in-process or on Redis.",
    license: { name: "MIT", identifier: "MIT" },
  },
  servers: [{ url: "http://127.0.0.1:8080", description: "the default `sluice serve` address" }],
  security: [{ bearer: [] }],
  paths: {
    "/v1/check": {
      post: {
        operationId: "check",
        summary: "Take `cost` units of `rule` for `key` (one check or a batch).",
        parameters: DEADLINE.parameters,
        requestBody: CHECK_BODY,
        responses: { "200": DECISIONS, ...BODY_ERRORS, ...DEADLINE.responses },
      },
    },
    "/v1/peek": {
      post: {
        operationId: "peek",
        summary: "What `/v1/check` would answer now; changes nothing.",
        requestBody: CHECK_BODY,
        responses: { "200": DECISIONS, ...BODY_ERRORS },
      },
    },
    "/v1/reset": {
      post: {
        operationId: "reset",
        summary: "Forget `key` under `rule` (its own spec and every tier); answers what a peek would then say.",
        parameters: DEADLINE.parameters,
        requestBody: CHECK_BODY,
        responses: { "200": DECISIONS, ...BODY_ERRORS, ...DEADLINE.responses },
      },
    },
    "/v1/refund": {
      post: {
        operationId: "refund",
        summary:
          "Give `cost` units back to `key` under `rule` (with `at`, a check's receipt, only what that check took and the algorithm still counts); answers what a peek would then say.",
        parameters: DEADLINE.parameters,
        requestBody: REFUND_BODY,
        responses: { "200": DECISIONS, ...BODY_ERRORS, ...DEADLINE.responses },
      },
    },
    "/v1/release": {
      post: {
        operationId: "release",
        summary:
          "Give back the `cost` leases of `key` under `rule` (a rule with a concurrency member) that the check with receipt `at` took; idempotent, and a lease that expired frees nothing. Answers what a peek would then say.",
        parameters: DEADLINE.parameters,
        requestBody: LEASE_BODY,
        responses: { "200": DECISIONS, ...BODY_ERRORS, ...DEADLINE.responses },
      },
    },
    "/v1/renew": {
      post: {
        operationId: "renew",
        summary:
          "Start the `leaseMs` of the `cost` leases with receipt `at` again: allowed with their new receipt `at`, or denied (changing nothing) when they are no longer held.",
        parameters: DEADLINE.parameters,
        requestBody: LEASE_BODY,
        responses: { "200": DECISIONS, ...BODY_ERRORS, ...DEADLINE.responses },
      },
    },
    "/v1/forward-auth": {
      get: {
        operationId: "forwardAuth",
        summary:
          "One check answered by status and headers, for reverse proxies (nginx auth_request, Traefik ForwardAuth, Caddy forward_auth).",
        parameters: [
          { name: "rule", in: "query", required: true, schema: { type: "string" } },
          {
            name: "key",
            in: "query",
            description:
              "Default: the client address of the forwarded request (the peer, or the address trusted proxies wrote, see `--trust-proxy` and `--proxy-header`).",
            schema: { type: "string" },
          },
          { name: "cost", in: "query", schema: { type: "integer", minimum: 1, default: 1 } },
          { name: "tier", in: "query", schema: { type: "string" } },
          {
            name: "deny",
            in: "query",
            description: "Status to answer when denied, for proxies that pass on only 401/403 (nginx `auth_request`).",
            schema: { type: "integer", minimum: 400, maximum: 499, default: 429 },
          },
        ],
        responses: {
          "200": { description: "Allowed (empty body).", headers: RATE_LIMIT_HEADERS },
          "400": problem("`invalid-query`, `unknown-tier`, `key-too-long`."),
          ...AUTH_ERRORS,
          "404": problem("`unknown-rule`."),
          "429": {
            description:
              "Denied (or the `deny` status). The quota-exceeded problem of the ratelimit-headers draft, with `violated-policies`.",
            headers: {
              ...RATE_LIMIT_HEADERS,
              "Retry-After": {
                description: "Whole seconds, rounded up; absent when the cost can never pass.",
                schema: { type: "integer", minimum: 1 },
              },
            },
            content: { "application/problem+json": { schema: ref("Problem") } },
          },
          "503": problem("Redis failed and the store's policy denies (or throws)."),
        },
      },
    },
    "/v1/rules": {
      get: {
        operationId: "rules",
        summary:
          "Every rule with its normalised specs, tiers and a summary in words; with --grpc-port, the Envoy domains and their limited descriptors.",
        responses: {
          "200": {
            description: "The rules.",
            content: json({
              type: "object",
              required: ["rules", "envoy"],
              properties: {
                rules: { type: "array", items: ref("RuleInfo") },
                envoy: {
                  description: "null without the Envoy API.",
                  type: ["object", "null"],
                  properties: {
                    domainCount: { type: "integer" },
                    domains: {
                      type: "array",
                      items: {
                        type: "object",
                        properties: {
                          domain: { type: "string" },
                          descriptorCount: { type: "integer" },
                          descriptors: { type: "array", items: { type: "object" } },
                        },
                      },
                    },
                    reloading: {
                      description:
                        "A reload in progress (its phase, and the descriptors or rules done so far), or null.",
                      type: ["object", "null"],
                    },
                  },
                },
              },
            }),
          },
          ...AUTH_ERRORS,
        },
      },
    },
    "/v1/status": {
      get: {
        operationId: "status",
        summary:
          "Totals per rule (the 100 busiest; ruleCount says how many there are), store tiers and config state (what the status page polls).",
        responses: { "200": { description: "Status.", content: json({ type: "object" }) }, ...AUTH_ERRORS },
      },
    },
    "/metrics": {
      get: {
        operationId: "metrics",
        summary: "Prometheus text exposition (format 0.0.4).",
        responses: {
          "200": { description: "Metrics.", content: { "text/plain": { schema: { type: "string" } } } },
          ...AUTH_ERRORS,
        },
      },
    },
    "/healthz": health("health", "Liveness and store health; never needs the token."),
    "/healthcheck": health(
      "healthcheck",
      "The same as /healthz, at envoyproxy/ratelimit's path; never needs the token.",
    ),
    "/openapi.json": {
      get: {
        operationId: "openapi",
        summary: "This document; never needs the token.",
        security: [],
        responses: { "200": { description: "OpenAPI 3.1.", content: json({ type: "object" }) } },
      },
    },
    "/": {
      get: {
        operationId: "statusPage",
        summary: "The operator's status page (HTML); never needs the token (the page asks for it).",
        security: [],
        responses: { "200": { description: "HTML.", content: { "text/html": { schema: { type: "string" } } } } },
      },
    },
    "/favicon.ico": {
      get: {
        operationId: "favicon",
        summary: "The status page's icon (SVG), so a browser's request for it is not a 404.",
        security: [],
        responses: {
          "200": { description: "SVG.", content: { "image/svg+xml": { schema: { type: "string" } } } },
        },
      },
    },
  },
  components: {
    securitySchemes: {
      bearer: {
        type: "http",
        scheme: "bearer",
        description: "Needed only when the service runs with `--token` (or `SLUICE_TOKEN`).",
      },
    },
    schemas: {
      CheckRequest: {
        type: "object",
        required: ["rule", "key"],
        additionalProperties: false,
        properties: REQUEST_FIELDS,
      },
      RefundRequest: {
        type: "object",
        required: ["rule", "key"],
        additionalProperties: false,
        properties: {
          ...REQUEST_FIELDS,
          at: {
            type: "number",
            description:
              "The refunded check's `at`. Without it, `cost` of the newest units the algorithm counts come back, whoever took them.",
          },
        },
      },
      LeaseRequest: {
        type: "object",
        required: ["rule", "key", "at"],
        additionalProperties: false,
        properties: {
          ...REQUEST_FIELDS,
          at: {
            type: "number",
            description: "The leases' receipt: the `at` of the check that took them, or of their last renewal.",
          },
        },
      },
      Decision: {
        type: "object",
        required: ["allowed", "limit", "remaining", "retryAfterMs", "resetMs", "delayMs"],
        properties: {
          allowed: { type: "boolean" },
          limit: { type: "integer" },
          remaining: { type: "integer", minimum: 0 },
          retryAfterMs: {
            type: ["integer", "null"],
            description: "0 when allowed; ms until the same request would pass; null when it never can.",
          },
          resetMs: { type: "integer", description: "ms until the key is back to full capacity." },
          delayMs: { type: "integer", description: "leaky-bucket: how long the admitted request should wait." },
          at: {
            type: "number",
            description:
              "The instant (ms, the service's clock) it was decided: the receipt `/v1/refund`, `/v1/release` and `/v1/renew` take.",
          },
          parts: { type: "array", items: { $ref: "#/components/schemas/Decision" } },
          failure: {
            type: "object",
            description: "Present when Redis failed and the failure policy answered.",
            properties: {
              policy: { enum: ["deny", "allow", "fallback"] },
              code: { type: "string" },
            },
          },
        },
      },
      RuleInfo: {
        type: "object",
        required: ["name", "specs", "tiers", "summary"],
        properties: {
          name: { type: "string" },
          specs: { type: "array", items: { type: "object" } },
          tiers: { type: "object", additionalProperties: { type: "array", items: { type: "object" } } },
          summary: { type: "string" },
        },
      },
      Health: {
        type: "object",
        required: ["status", "store"],
        properties: {
          status: { enum: ["ok", "unavailable"] },
          store: { type: "string" },
          rules: { type: "integer" },
          config: { type: "object", properties: { lastReloadOk: { type: "boolean" } } },
        },
      },
      Problem: {
        type: "object",
        description: "RFC 9457 problem details; `type` is `urn:sluice:problem:<slug>`.",
        required: ["type", "title", "status"],
        properties: {
          type: { type: "string" },
          title: { type: "string" },
          status: { type: "integer" },
          detail: { type: "string" },
          instance: { type: "string" },
          index: { type: "integer", description: "The refused item of a batch." },
        },
      },
    },
  },
} as const;

const BODY = JSON.stringify(OPENAPI);

/** `GET /openapi.json`. */
export function handleOpenApi(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-cache",
    "content-length": Buffer.byteLength(BODY),
  });
  res.end(BODY);
}
