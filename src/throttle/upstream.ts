/**
 * Obeying the upstream: `observe` reads an answer and pauses its key for the whole fleet (a
 * `block` in the shared store, so every process's next permit is refused until it ends, plus a
 * local pause so this process does not even ask); `fetch` schedules a request, observes its
 * answer before its slot goes back (so no other job of the fleet starts in between), and sends
 * a 429 again once the pause is over, keeping its place in the queue.
 */
import { describeValue } from "../core/describe-value.ts";
import { ArgumentError } from "../core/errors.ts";
import type { Store } from "../core/store.ts";
import type { AdaptiveRate } from "./adaptive-rate-store.ts";
import { DEFAULT_KEY, type ResolvedOptions, type ScheduleOptions } from "./options.ts";
import type { ThrottleRunner } from "./runner.ts";
import { type HeadersLike, type ResponseLike, readUpstream, type UpstreamHint } from "./upstream-headers.ts";

/** Pauses and upstream answers of one throttle. */
export class Upstream {
  constructor(
    private readonly runner: ThrottleRunner,
    private readonly opts: ResolvedOptions,
    private readonly store: Store,
    private readonly adaptive?: AdaptiveRate,
  ) {}

  /**
   * Refuses `key` for `ms` here and for the whole fleet: in the fleet queue's store, which tells
   * every process at once (jobs granted ahead go back to the queue), or else as a block on the
   * key's record where the store can hold one. Resolves with whether the fleet queue had the key
   * paused already (undefined: no fleet queue answered).
   */
  async pause(key: string, ms: number, reason = "pause"): Promise<boolean | undefined> {
    if (typeof key !== "string") throw new ArgumentError(`pause: \`key\` must be a string (got ${describeValue(key)})`);
    if (typeof ms !== "number" || !Number.isFinite(ms) || ms <= 0) {
      throw new ArgumentError(`pause: \`ms\` must be a number of ms > 0 (got ${describeValue(ms)})`);
    }
    const whole = Math.ceil(ms);
    this.runner.pauseLocally(key, whole, reason);
    const fleet = await this.runner.pauseFleet(key, whole);
    if (fleet !== undefined) return fleet.already;
    const limiter = this.runner.pauseLimiter;
    if (limiter !== undefined && this.store.flexibleCalls === true) await limiter.block(key, whole);
    return undefined;
  }

  /** Reads `answer` (a response, or its headers) for `key` and pauses the key as it asks. */
  async observe(key: string, answer: ResponseLike | HeadersLike): Promise<UpstreamHint> {
    if (typeof key !== "string")
      throw new ArgumentError(`observe: \`key\` must be a string (got ${describeValue(key)})`);
    if (typeof answer !== "object" || answer === null) {
      throw new ArgumentError(`observe: \`answer\` must be a response or its headers (got ${describeValue(answer)})`);
    }
    const isResponse = "headers" in answer && typeof answer.headers === "object" && answer.headers !== null;
    const status = isResponse ? ((answer as ResponseLike).status ?? (answer as ResponseLike).statusCode) : undefined;
    const headers = isResponse ? (answer as ResponseLike).headers : (answer as HeadersLike);
    const hint = readUpstream(status, headers, this.runner.clock.now(), this.opts);
    // Only a refusal cuts the adaptive rate (a RateLimit field at r=0 on a 200 is the plan, not an
    // overload), and only one that starts a pause: a 429 of a request sent before another process
    // paused the key belongs to that pause, which has cut already.
    // The check goes out before the block, on the same connection: no round trip is added before
    // the fleet is paused (every request another process starts meanwhile would be a 429 more).
    const before = status === 429 && this.adaptive !== undefined ? this.#pausedInStore(key) : undefined;
    const already = hint.pauseMs > 0 ? await this.pause(key, hint.pauseMs, hint.source ?? "upstream") : undefined;
    if (before !== undefined && !(already ?? (await before))) await this.adaptive?.cut(key, hint.pauseMs);
    return hint;
  }

  /** Whether the fleet has paused `key` already (a block in the store). */
  async #pausedInStore(key: string): Promise<boolean> {
    const limiter = this.runner.pauseLimiter;
    if (limiter === undefined || this.store.flexibleCalls !== true) return false;
    return (await limiter.get(key))?.banned === true;
  }

  /** Schedules `fetch(input, init)`; a 429 is sent again after its pause, up to `retries` times. */
  async fetch(input: string | URL | Request, init?: RequestInit, options?: ScheduleOptions): Promise<Response> {
    const send = this.opts.fetch ?? globalThis.fetch;
    const key = options?.key ?? DEFAULT_KEY;
    // A streamed body can be sent once: such a request is never sent again.
    const replayable = !(init?.body instanceof ReadableStream) && !(input instanceof Request && input.bodyUsed);
    // The request's own signal (init's, or a Request's) removes it from the queue too, not only
    // once it is being sent: an abort while it waits (say, through a pause) rejects at once.
    const own = [
      options?.signal,
      init?.signal ?? undefined,
      input instanceof Request ? input.signal : undefined,
    ].filter((s): s is AbortSignal => s !== undefined);
    const scheduled: ScheduleOptions | undefined =
      own.length === 0
        ? options
        : { ...options, signal: own.length === 1 ? (own[0] as AbortSignal) : AbortSignal.any(own) };
    const seq = this.runner.reserveSeq();
    for (let attempt = 0; ; attempt++) {
      const again = attempt < this.opts.retries && replayable;
      const answer = await this.runner.schedule(
        async ({ signal }) => {
          const request = input instanceof Request ? input.clone() : input;
          const both = init?.signal ? AbortSignal.any([init.signal, signal]) : signal;
          const response = await send(request, { ...init, signal: both });
          await this.observe(key, response);
          if (response.status === 429 && again) {
            await response.body?.cancel();
            return undefined;
          }
          return response;
        },
        scheduled,
        seq,
      );
      if (answer !== undefined) return answer;
    }
  }
}
