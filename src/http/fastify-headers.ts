/**
 * Writing and reading a Fastify reply's headers for the engine. `reply.header(name, value)`
 * stores `value` under the lower-cased name in the reply's own headers object, which Fastify
 * hands to `writeHead`; sluice writes the same entries into that object directly, as constant
 * named properties, which V8 keeps on its fast path (`reply.header` stores each name through
 * one generic keyed store). What the client receives is the same.
 *
 * The object is found under Fastify's `fastify.reply.headers` symbol, and only trusted once a
 * header written through `reply.header` was seen there (on the first request); until then, or
 * with a Fastify that keeps headers elsewhere, every header goes through `reply.header`.
 */
import type { FastifyReply } from "fastify";
import { flat } from "./headers.ts";

/** A reply's headers object, as Fastify keeps it: lower-case name → value. */
type HeaderObject = Record<string, unknown>;

/** The symbol of the reply's headers object: undefined until confirmed, null once ruled out. */
let headersSymbol: symbol | null | undefined;

/** Header names in lower case, by the name the engine writes. */
const LOWER_NAMES = new Map<string, string>();

/**
 * `name` in lower case, as Fastify stores it (`reply.header` lower-cases every name): the
 * lower-case string already made skips a new string and a string-table lookup per header per
 * request. The engine writes a handful of fixed names, so the map stays that small.
 */
function lowerCase(name: string): string {
  let lower = LOWER_NAMES.get(name);
  if (lower === undefined) {
    lower = name.toLowerCase();
    if (LOWER_NAMES.size < 64) LOWER_NAMES.set(name, lower);
  }
  return lower;
}

/** The candidate symbol for Fastify's reply headers object (not yet confirmed). */
function candidateSymbol(reply: FastifyReply): symbol | null {
  for (const symbol of Object.getOwnPropertySymbols(reply)) {
    if (symbol.description !== "fastify.reply.headers") continue;
    const value = (reply as unknown as Record<symbol, unknown>)[symbol];
    if (typeof value === "object" && value !== null) return symbol;
  }
  return null;
}

/**
 * Sets one header through `reply.header`, and on the first such write confirms (or rules out)
 * the headers object: it is trusted only if the value landed there under the lower-case name.
 */
function setThroughFastify(reply: FastifyReply, lower: string, value: string): void {
  reply.header(lower, value);
  if (headersSymbol !== undefined) return;
  const symbol = candidateSymbol(reply);
  headersSymbol =
    symbol !== null && (reply as unknown as Record<symbol, HeaderObject>)[symbol]?.[lower] === value ? symbol : null;
}

/**
 * Writes the engine's headers onto one reply at a time (`begin`, the engine's `set`/`get`,
 * `end`). The draft-11 pair is held until `end` (or until any other header is set, to keep the
 * order), then stored as two named properties of the reply's headers object. (Not as a new
 * object literal in place of an empty one: Fastify's empty object has room for four
 * properties, a two-property literal has none, so Fastify's content-type and content-length
 * then cost a property store allocation, and the literal itself is one more object to collect.)
 */
export class ReplyHeaderWriter {
  #reply: FastifyReply | undefined;
  #headers: HeaderObject | undefined;
  #policy: string | undefined;
  #rateLimit: string | undefined;

  /** Starts on `reply`; the previous reply's writing must have ended. */
  begin(reply: FastifyReply): void {
    this.#reply = reply;
    this.#headers = headersSymbol ? (reply as unknown as Record<symbol, HeaderObject>)[headersSymbol] : undefined;
  }

  /** The engine's `set`. */
  readonly set = (name: string, value: string): void => {
    const headers = this.#headers;
    if (headers === undefined) setThroughFastify(this.#reply as FastifyReply, lowerCase(name), value);
    else if (name === "RateLimit-Policy" && this.#rateLimit === undefined) this.#policy = value;
    else if (name === "RateLimit") this.#rateLimit = flat(value);
    else {
      this.#flush(headers);
      headers[lowerCase(name)] = value;
    }
  };

  /** The engine's `get`: what the reply has (held values first, then its headers, then the raw response's). */
  readonly get = (name: string): string | undefined => {
    const reply = this.#reply as FastifyReply;
    const headers = this.#headers;
    // (The engine asks for this one on every request, already in lower case.)
    const lower = name === "ratelimit-policy" ? name : lowerCase(name);
    let value: unknown;
    if (headers === undefined) value = reply.getHeader(lower);
    else {
      if (lower === "ratelimit-policy") value = this.#policy ?? headers["ratelimit-policy"];
      else if (lower === "ratelimit") value = this.#rateLimit ?? headers.ratelimit;
      else value = headers[lower];
      if (value === undefined) value = reply.raw.getHeader(lower);
    }
    return value === undefined ? undefined : Array.isArray(value) ? value.join(", ") : String(value);
  };

  /** Puts the held headers on the reply. */
  end(): void {
    const headers = this.#headers;
    if (headers !== undefined) this.#flush(headers);
    this.#reply = undefined;
    this.#headers = undefined;
  }

  /** Stores the held pair as named properties, in the order the engine wrote them. */
  #flush(headers: HeaderObject): void {
    if (this.#policy !== undefined) headers["ratelimit-policy"] = this.#policy;
    if (this.#rateLimit !== undefined) headers.ratelimit = this.#rateLimit;
    this.#policy = undefined;
    this.#rateLimit = undefined;
  }
}
