/**
 * The load shedder every `loadShed` adapter drives: it admits or sheds each request by its
 * priority, counts requests in flight, and moves its limit (fixed or adaptive) and its
 * event-loop cutoff. Framework adapters (src/http/shed-*.ts) only read the request, answer 503
 * and call the release when the response ends.
 */
import { stopwatch } from "../core/clock.ts";
import { AdaptiveLimit, fixedLimit, type LimitSource } from "./adaptive.ts";
import { admits, allowances, coveredLevels, fitsReserve, heldShares } from "./admission.ts";
import { sampleEventLoop } from "./event-loop.ts";
import { FleetLimit, type FleetRelease } from "./fleet.ts";
import { priorityCounts, prometheusText, type ShedStats } from "./metrics.ts";
import { checkShedOptions, type LoadShedOptions, priorityOf, type ShedConfig } from "./options.ts";
import { NO_PRESSURE, PRIORITY_LEVELS, type PressureState, pressureStep } from "./pressure.ts";

/**
 * Ends an admitted request's turn: idempotent, so the first of finish, error and disconnect
 * releases and the others do nothing. `sample: false` (an aborted or failed request) leaves
 * its latency out of the adaptive limit.
 */
export type Release = (sample?: boolean) => void;

/** What every `loadShed` handle offers besides the middleware itself. */
export interface LoadShedHandle {
  /** The current limit, requests in flight, and requests shed by priority. */
  stats(): ShedStats;
  /** The same as Prometheus text exposition (format 0.0.4), to append to a `/metrics` answer. */
  prometheus(): string;
  /** Stops the event-loop sampler (it never keeps the process alive anyway). */
  close(): void;
}

const UNLIMITED = new Array<number>(PRIORITY_LEVELS).fill(Number.POSITIVE_INFINITY);

/**
 * The longest stall (ms) whose arrivals the reserve's levels are admitted for at once: past a
 * second the requests were not bunched by a stall of the host but held up by the service.
 */
const MAX_STALL_MS = 1000;

/** The shedder: one per `loadShed(options)` call. */
export class Shedder<Req> implements LoadShedHandle {
  readonly config: ShedConfig<Req>;
  readonly #source: LimitSource | undefined;
  /** The adaptive limit, the one reader of request latencies: without it no clock is read per request. */
  readonly #timed: AdaptiveLimit | undefined;
  readonly #held: number[];
  /** Priorities below this may use a reserve. */
  readonly #covered: number;
  /** Requests in flight by priority (the reserve counts the less critical levels at most at their share). */
  readonly #byLevel = priorityCounts();
  readonly #now: () => number;
  #allowance: readonly number[] = UNLIMITED;
  #allowanceFor = Number.NaN;
  #allowanceSteady = Number.NaN;
  #inFlight = 0;
  #admitted = 0;
  /**
   * With the adaptive limit, the last instant a request started or finished, and the end and
   * length of the last stall seen: a gap longer than the long-term latency while requests were
   * in flight (none finished when some were due: the process did not run).
   */
  #lastSeen = Number.NaN;
  #stallEnd = Number.NEGATIVE_INFINITY;
  #stallMs = 0;
  readonly #shed = priorityCounts();
  #pressure: PressureState = NO_PRESSURE;
  #delayMs: number | undefined;
  #utilization: number | undefined;
  readonly #stopSampling: (() => void) | undefined;
  readonly #fleet: FleetLimit | undefined;

  /** Checks `options` (`extraKeys`: the adapter's own options) and starts the event-loop sampler if a threshold is set. */
  constructor(options: LoadShedOptions<Req>, extraKeys: readonly string[] = []) {
    const config = checkShedOptions<Req>(options, extraKeys);
    this.config = config;
    const clock = config.clock;
    this.#now = clock === undefined ? stopwatch : () => clock.now();
    this.#held = heldShares(config.reserve);
    this.#covered = coveredLevels(this.#held);
    this.#fleet =
      config.store === undefined
        ? undefined
        : new FleetLimit(config.store, config.name, config.limit as number, config.reserve, config.leaseMs);
    this.#source =
      config.limit === undefined
        ? undefined
        : config.limit === "adaptive"
          ? new AdaptiveLimit(config.adaptive, this.#now())
          : fixedLimit(config.limit);
    this.#timed = this.#source instanceof AdaptiveLimit ? this.#source : undefined;
    const maxDelay = config.maxEventLoopDelayMs;
    const maxUtilization = config.maxEventLoopUtilization;
    if (maxDelay !== undefined || maxUtilization !== undefined) {
      this.#stopSampling = sampleEventLoop(config.sampleIntervalMs, ({ delayMs, utilization }) => {
        const delayLoad = maxDelay === undefined ? 0 : delayMs / maxDelay;
        const utilizationLoad = maxUtilization === undefined ? 0 : utilization / maxUtilization;
        if (maxDelay !== undefined) this.#delayMs = delayMs;
        if (maxUtilization !== undefined) this.#utilization = utilization;
        this.pressure(Math.max(delayLoad, utilizationLoad));
      });
    }
  }

  /** `Retry-After` of a shed request, in seconds. */
  get retryAfterSeconds(): number {
    return this.config.retryAfterSeconds;
  }

  /** Requests in flight now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * The limit a reserve's shares are taken of now (the adaptive limit's steadier one, see
   * `LimitSource.steady`); undefined without a limit.
   */
  get steadyLimit(): number | undefined {
    return this.#source?.steady();
  }

  /**
   * The release of an admitted `request`, or undefined when it is shed (counted by its
   * priority). With a `store` the fleet decides, and the answer is a promise on an async store.
   */
  admit(request: Req): Release | undefined | Promise<Release | undefined> {
    const priority = priorityOf(this.config.priority, request);
    const source = this.#source;
    if (source !== undefined) {
      const limit = source.current();
      const steady = source.steady();
      if (limit !== this.#allowanceFor || steady !== this.#allowanceSteady) {
        this.#allowance = allowances(limit, this.#held, steady);
        this.#allowanceFor = limit;
        this.#allowanceSteady = steady;
      }
    }
    const fleet = this.#fleet;
    // With a fleet, this process's own count does not limit: the fleet's pools do (a level
    // allowed no slot at all, or shed for pressure, is refused here without a round trip).
    if (!admits(fleet === undefined ? this.#inFlight : 0, priority, this.#allowance, this.#pressure.cutoff)) {
      // A level a reserve covers may still fit: the rest counted at most at their share. (A
      // fleet's pools have a fixed limit: no level ever holds more than its share there.)
      // And an idle process always admits (unless under pressure): a reserve can hold every
      // slot of a small limit (a fixed one, or an adaptive one that shrank), and must not
      // then shed the other levels with nothing running. The reserve still holds: that
      // request counts against the covered levels at its level's share, 0. (A fleet cannot
      // see it is idle: such a reserve is refused when built.)
      if (
        fleet === undefined &&
        priority < this.#pressure.cutoff &&
        (this.#inFlight === 0 ||
          (priority < this.#covered &&
            (fitsReserve(this.#byLevel, priority, this.#allowance) || this.#fitsAfterStall(priority))))
      ) {
        return this.#hold(undefined, priority);
      }
      // Refused by the limit, not by event-loop pressure: the adaptive limit is binding.
      // (Under the limit: a reserve's share refused it, and the window's concurrency is not
      // what the demand would fill.)
      if (priority < this.#pressure.cutoff) source?.refused(this.#inFlight < this.#allowanceFor);
      return this.#shedAt(priority);
    }
    if (fleet === undefined) return this.#hold(undefined, priority);
    const leased = fleet.take(priority);
    if (leased instanceof Promise) {
      return leased.then((leases) => (leases === undefined ? this.#shedAt(priority) : this.#hold(leases, priority)));
    }
    return leased === undefined ? this.#shedAt(priority) : this.#hold(leased, priority);
  }

  /**
   * Whether a request of a level the reserve covers fits once the requests bunched by a stall
   * of the host are counted as they arrived, spread over the stall (adaptive limit only: it
   * reads the clock anyway). A stall of `s` ms delivers at once what came over `s`, and the
   * critical traffic's concurrency (its rate × its latency, which the reserve was sized for)
   * is then (latency + s) / latency times its usual: until the bunch has had one latency and
   * the stall's length again to drain, the reserve's levels are admitted against their steady
   * allowance scaled by that (a stall of
   * up to 240 ms on a 41 ms service filled the critical level's 13 slots: 3.7% of a run's
   * critical requests shed).
   * Less critical levels keep their allowance: the flood is still cut at once.
   */
  #fitsAfterStall(priority: number): boolean {
    const timed = this.#timed;
    if (timed === undefined) return false;
    const rtt = timed.state.longRtt;
    if (!(rtt > 0) || this.#now() - this.#stallEnd > rtt + this.#stallMs) return false;
    const source = timed as LimitSource;
    const stretched = Math.ceil(source.steady() * (1 + this.#stallMs / rtt));
    return fitsReserve(this.#byLevel, priority, allowances(source.current(), this.#held, stretched));
  }

  /**
   * Notes an instant a request started or finished at (adaptive limit; `busy`: requests were in
   * flight since the last one): a gap longer than the long-term latency while busy is a stall.
   */
  #seen(now: number, busy: boolean, rtt: number): void {
    const gap = now - this.#lastSeen;
    if (busy && rtt > 0 && gap > rtt) {
      this.#stallEnd = now;
      this.#stallMs = Math.min(gap, MAX_STALL_MS);
    }
    this.#lastSeen = now;
  }

  #shedAt(priority: number): undefined {
    this.#shed[priority] = (this.#shed[priority] as number) + 1;
    return undefined;
  }

  #hold(leases: FleetRelease | undefined, priority: number): Release {
    const source = this.#source;
    const byLevel = this.#byLevel;
    this.#inFlight++;
    byLevel[priority] = (byLevel[priority] as number) + 1;
    this.#admitted++;
    source?.started(this.#inFlight);
    // A fixed limit (or none) uses no latency: two clock reads per request saved.
    const timed = this.#timed;
    let startedAt = 0;
    const admittedInFlight = this.#inFlight;
    if (timed !== undefined) {
      startedAt = this.#now();
      this.#seen(startedAt, this.#inFlight > 1, timed.state.longRtt);
    }
    let released = false;
    return (sample = true) => {
      if (released) return;
      released = true;
      this.#inFlight--;
      byLevel[priority] = (byLevel[priority] as number) - 1;
      leases?.();
      if (timed !== undefined) {
        const now = this.#now();
        // (This request was in flight since it started.)
        this.#seen(now, true, timed.state.longRtt);
        if (sample) timed.completed(now - startedAt, startedAt, now, admittedInFlight);
      }
    };
  }

  /** Feeds one event-loop sample's load (its value over the threshold; 1 = at it). Exposed for tests. */
  pressure(load: number): void {
    this.#pressure = pressureStep(this.#pressure, load, this.config.pressure);
  }

  stats(): ShedStats {
    const shedByPriority = [...this.#shed];
    return {
      limit: this.#source?.current(),
      inFlight: this.#inFlight,
      admitted: this.#admitted,
      shed: shedByPriority.reduce((a, b) => a + b, 0),
      shedByPriority,
      shedFromPriority: this.#pressure.cutoff,
      eventLoopDelayMs: this.#delayMs,
      eventLoopUtilization: this.#utilization,
    };
  }

  prometheus(): string {
    return prometheusText(this.config.name, this.stats());
  }

  close(): void {
    this.#stopSampling?.();
  }
}
