/**
 * `sluice/fastify`: a Fastify plugin that limits on `onRequest` (before the body is parsed,
 * so a limited client costs as little as possible). The decision is on `request.rateLimit`.
 *
 * Scope: the plugin is marked `skip-override` (what `fastify-plugin` does), so its hook
 * applies to the context it is registered in and that context's children: register it on
 * the root to limit every route, or inside an encapsulated plugin to limit only that
 * plugin's routes, or pass `prefix` to limit only the routes under it. For one route, use
 * `rateLimitHook(options)` as the route's `onRequest`.
 */
import type {
  FastifyInstance,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
} from "fastify";
import type { Decision } from "../algorithms/decision.ts";
import { describeValue } from "../core/describe-value.ts";
import { ConfigError } from "../core/errors.ts";
import { Engine, isPromise, type Verdict } from "./engine.ts";
import { ReplyHeaderWriter } from "./fastify-headers.ts";
import { type RateLimitHandles, withHandles } from "./handles.ts";
import { nodeReader, settleOnEnd } from "./node.ts";
import type { MaybePromise, RateLimitOptions } from "./options.ts";
import { PROBLEM_CONTENT_TYPE } from "./problem.ts";
import { tighter } from "./stack.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The decision of the rate limiter(s) that checked this request (the tightest, when stacked). */
    rateLimit?: Decision;
  }
  interface FastifyContextConfig {
    /**
     * This route's limit under the sluice plugin: options merged over the plugin's (a route
     * without its own `name` keeps its own state, named after its URL), or `false`
     * for no limit on this route.
     */
    rateLimit?: Partial<FastifyRateLimitOptions> | false;
  }
  interface FastifyInstance {
    /** Handles on the state of the sluice plugin registered in this context (its own limit, not routes' overrides). */
    rateLimit: RateLimitHandles;
  }
}

/** Options of the Fastify plugin and hook. */
export interface FastifyRateLimitOptions extends RateLimitOptions<FastifyRequest, FastifyReply> {
  /** Answers a limited request (status 429 and headers already set on `reply`); must send it. */
  onLimited?: (request: FastifyRequest, reply: FastifyReply, decision: Decision) => void;
}

/** Options Fastify itself adds to a plugin's options object (`register(plugin, { prefix })`). */
const REGISTER_KEYS = ["prefix", "logLevel", "logSerializers"];

/** An `onRequest` hook limiting each client, for routes or contexts of your choosing. */
export function rateLimitHook(options: FastifyRateLimitOptions): onRequestHookHandler & RateLimitHandles {
  return hookFor(options, ["onLimited"]);
}

function hookFor(
  options: FastifyRateLimitOptions,
  adapterKeys: readonly string[],
): onRequestHookHandler & RateLimitHandles {
  const engine = new Engine<FastifyRequest, FastifyReply>(
    options,
    {
      address: (request) => nodeReader.address(request.raw),
      header: (request, name) => nodeReader.header(request.raw, name),
      connection: (request) => request.raw.socket ?? undefined,
    },
    adapterKeys,
    // @fastify/rate-limit's `x-ratelimit-reset` is the seconds left, not an epoch second.
    "delta",
  );
  const onLimited = options.onLimited;
  // Writes the headers of one reply at a time: `writeHeaders` calls `set`/`get` synchronously,
  // so one writer per hook serves every request, and no closure is made per request.
  const writer = new ReplyHeaderWriter();
  const respond = (
    verdict: Verdict | null,
    request: FastifyRequest,
    reply: FastifyReply,
    done: (error?: Error) => void,
  ): void => {
    if (verdict === null) {
      done();
      return;
    }
    if (verdict.decision !== undefined) request.rateLimit = tighter(request.rateLimit, verdict.decision);
    writer.begin(reply);
    try {
      engine.writeHeaders(verdict, writer.set, writer.get);
    } finally {
      writer.end();
    }
    if (verdict.status === 200) {
      // The raw response's events, not an onResponse hook: they also tell an aborted request
      // (no 'finish'), and a route-level hook cannot add hooks.
      if (engine.observes(verdict)) settleOnEnd(engine, verdict, request, reply, reply.raw);
      done();
      return;
    }
    reply.code(verdict.status);
    // Replying from a callback-style hook: send, and do not call done().
    if (verdict.status === 429 && onLimited !== undefined) onLimited(request, reply, verdict.decision);
    else reply.type(PROBLEM_CONTENT_TYPE).send(engine.body(verdict));
  };
  const hook: onRequestHookHandler = function sluiceOnRequest(this: FastifyInstance, request, reply, done) {
    let verdict: MaybePromise<Verdict | null>;
    try {
      verdict = engine.decide(request);
      if (!isPromise(verdict)) return respond(verdict, request, reply, done);
    } catch (error) {
      return done(error as Error);
    }
    verdict.then(
      (v) => {
        try {
          respond(v, request, reply, done);
        } catch (error) {
          done(error as Error);
        }
      },
      (error: Error) => done(error),
    );
  };
  return withHandles(hook, engine);
}

/** What a route's `config.rateLimit` resolves to: its own hook, or none (`false`). */
type RouteHook = onRequestHookHandler | false;

/**
 * The hook of a route whose `config.rateLimit` overrides the plugin's options, built once per
 * config object and URL: the plugin's options with the route's merged over them. Without its
 * own `name`, the route's state is named `<plugin name>:<url>`, so two routes with equal
 * overrides do not share a budget (give them one `name` to share on purpose).
 */
function routeHooks(options: FastifyRateLimitOptions): (config: unknown, method: string, url: string) => RouteHook {
  // By config object, then URL: one object reused on several routes still gives each its own
  // state; a GET and the HEAD route Fastify adds for it share one.
  const built = new WeakMap<object, Map<string, RouteHook>>();
  return (config, method, url) => {
    if (config === false) return false;
    if (typeof config !== "object" || config === null) {
      throw new ConfigError(
        "config.rateLimit",
        `route ${method} ${url}: \`config.rateLimit\` must be an options object or false (got ${describeValue(config)})`,
        config,
      );
    }
    let byUrl = built.get(config);
    if (byUrl === undefined) built.set(config, (byUrl = new Map()));
    let hook = byUrl.get(url);
    if (hook === undefined) {
      const { prefix: _p, logLevel: _l, logSerializers: _s, ...base } = options as Record<string, unknown>;
      const merged = { ...base, ...config } as FastifyRateLimitOptions;
      const own = config as Partial<FastifyRateLimitOptions>;
      // Only a spec limiter has a state name; a service rule's state is the rule's.
      if (own.name === undefined && merged.service === undefined) {
        merged.name = `${options.name ?? "fastify"}:${url}`;
        if (own.policyName === undefined && options.policyName === undefined)
          merged.policyName = options.name ?? "default";
      }
      hook = hookFor(merged, ["onLimited"]);
      byUrl.set(url, hook);
    }
    return hook;
  };
}

/** A matched route's `config` as Fastify keeps it: the route's own options plus `url` and `method`. */
type RouteContextConfig = { rateLimit?: unknown; url?: string; method?: string } | undefined;

/**
 * The symbol under which Fastify keeps a request's route context, once found (null: not found,
 * undefined: not looked for yet). `request.routeOptions` builds a new object on every read
 * (Fastify 5), which cost more than the rest of the check; its `config` is the route context's
 * `config`, so the context is read directly once the symbol is found and checked to give that
 * same object. A request without it (another copy of Fastify) falls back to `routeOptions`.
 */
let contextSymbol: symbol | null | undefined;

function findContextSymbol(request: FastifyRequest): symbol | null {
  const config = request.routeOptions?.config;
  if (config === undefined) return null;
  for (const symbol of Object.getOwnPropertySymbols(request)) {
    const context = (request as unknown as Record<symbol, { config?: unknown } | undefined>)[symbol];
    if (symbol.description === "fastify.context" && context?.config === config) return symbol;
  }
  return null;
}

/** The matched route's `config` (what `request.routeOptions.config` is), read without building `routeOptions`. */
function routeContextConfig(request: FastifyRequest): RouteContextConfig {
  if (contextSymbol === undefined) contextSymbol = findContextSymbol(request);
  if (contextSymbol !== null) {
    const context = (request as unknown as Record<symbol, { config?: RouteContextConfig } | undefined>)[contextSymbol];
    if (context !== undefined) return context.config;
  }
  return request.routeOptions?.config as RouteContextConfig;
}

/** The route's `config.rateLimit` (undefined when the route has none). */
function routeConfig(request: FastifyRequest): unknown {
  return routeContextConfig(request)?.rateLimit;
}

/**
 * `hook` limited to the routes under `path`. The plugin applies to the context it is registered
 * in (skip-override), where Fastify ignores `register`'s `prefix`; so the prefix is honoured
 * here, by the matched route's pattern (`/api/users/:id`), not the raw URL, whose case,
 * encoding or duplicate slashes a client could vary to slip past.
 */
function underPrefix(path: string, hook: onRequestHookHandler): onRequestHookHandler {
  return function sluicePrefixedOnRequest(this: FastifyInstance, request, reply, done) {
    const url = routeContextConfig(request)?.url;
    if (url !== undefined && (path === "" || url === path || url.startsWith(`${path}/`))) {
      return hook.call(this, request, reply, done);
    }
    done();
  };
}

/**
 * The plugin: `app.register(rateLimit, options)`. With `register`'s `prefix` option it limits
 * only the routes under that prefix (a request matching no route is not limited then).
 */
export const rateLimit: FastifyPluginCallback<FastifyRateLimitOptions> = function sluiceFastify(
  instance,
  options,
  done,
) {
  let hook: onRequestHookHandler & RateLimitHandles;
  try {
    hook = hookFor(options, ["onLimited", ...REGISTER_KEYS]);
  } catch (error) {
    // A callback plugin must report through done(): a throw would leave Fastify waiting.
    done(error as Error);
    return;
  }
  const perRoute = routeHooks(options);
  const prefix = (options as { prefix?: unknown }).prefix;
  let scoped: onRequestHookHandler = hook;
  if (prefix !== undefined) {
    if (typeof prefix !== "string" || !prefix.startsWith("/")) {
      done(
        new ConfigError("prefix", `\`prefix\` must be a path starting with "/" (got ${describeValue(prefix)})`, prefix),
      );
      return;
    }
    scoped = underPrefix(`${instance.prefix}${prefix}`.replace(/\/+$/, ""), hook);
  }
  // Declared once per instance so every request object has the property from the start.
  if (!instance.hasRequestDecorator("rateLimit")) instance.decorateRequest("rateLimit", undefined);
  if (!instance.hasDecorator("rateLimit")) instance.decorate("rateLimit", withHandles({}, hook));
  // A bad `config.rateLimit` fails when the route is declared, not on its first request.
  instance.addHook("onRoute", (route) => {
    const config = (route.config as { rateLimit?: unknown } | undefined)?.rateLimit;
    if (config !== undefined) perRoute(config, String(route.method), route.url);
  });
  instance.addHook("onRequest", function sluiceRoute(this: FastifyInstance, request, reply, next) {
    const config = routeConfig(request);
    if (config === undefined) return scoped.call(this, request, reply, next);
    let own: RouteHook;
    try {
      own = perRoute(config, request.routeOptions.method as string, request.routeOptions.url ?? request.url);
    } catch (error) {
      return next(error as Error);
    }
    if (own === false) return next();
    return own.call(this, request, reply, next);
  });
  done();
};

// What fastify-plugin sets, without the dependency: apply to the registering context (not a
// new child), name the plugin in errors and in `printPlugins()`, and declare the versions.
Object.assign(rateLimit, {
  [Symbol.for("skip-override")]: true,
  [Symbol.for("fastify.display-name")]: "sluice",
  [Symbol.for("plugin-meta")]: { name: "sluice", fastify: ">=4" },
});

export default rateLimit;
export type { AddressRef, HandleKey, PeekOptions, RateLimitHandles } from "./handles.ts";
export type { RateLimitOptions } from "./options.ts";
export type { LoadShedHandle, LoadShedOptions, ShedStats } from "./shed.ts";
export type { FastifyLoadShed } from "./shed-fastify.ts";
export { loadShed } from "./shed-fastify.ts";
