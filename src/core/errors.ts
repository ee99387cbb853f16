/**
 * Every error sluice throws extends {@link SluiceError} and carries a stable string `code`.
 * Being rate limited is never an error: it is a Decision with `allowed: false`.
 */

/** Base class of all sluice errors; `code` is stable and safe to switch on. */
export class SluiceError extends Error {
  /** Stable machine-readable code, e.g. `ERR_INVALID_SPEC`. */
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A spec (or rules file) is invalid; `field` names the offending field. */
export class ConfigError extends SluiceError {
  /** The field that was wrong, e.g. `limit`. */
  readonly field: string;
  /** The value received for that field. */
  readonly value: unknown;
  constructor(field: string, message: string, value?: unknown, options?: { cause?: unknown }) {
    super("ERR_INVALID_SPEC", message, options);
    this.field = field;
    this.value = value;
  }
}

/** A call got a bad argument: a key that is not a string, a bad cost, an unknown tier. */
export class ArgumentError extends SluiceError {
  /**
   * The argument or option that was wrong, e.g. `priority` (undefined when the message names none).
   * Every message names it first between backticks, so it is read from there unless given: one
   * convention for the 140-odd call sites instead of a second copy of each name.
   */
  readonly field: string | undefined;
  constructor(message: string, options?: { cause?: unknown; field?: string }) {
    super("ERR_INVALID_ARGUMENT", message, options);
    this.field = options?.field ?? /`([^`]+)`/.exec(message)?.[1];
  }
}

/** `check`, `peek`, `reset` or `updateRule` named a rule the service does not have. */
export class UnknownRuleError extends SluiceError {
  /** The rule name that was asked for. */
  readonly rule: string;
  constructor(rule: string) {
    super("ERR_UNKNOWN_RULE", `unknown rule ${JSON.stringify(rule)}`);
    this.rule = rule;
  }
}

/** `addRule` was given a name that is already registered. */
export class DuplicateRuleError extends SluiceError {
  /** The rule name that already exists. */
  readonly rule: string;
  constructor(rule: string) {
    super("ERR_DUPLICATE_RULE", `rule ${JSON.stringify(rule)} already exists (use updateRule to change it)`);
    this.rule = rule;
  }
}

/** The store failed (`ERR_STORE`) or did not answer in time (`ERR_STORE_TIMEOUT`). */
export class StoreError extends SluiceError {
  constructor(message: string, options?: { cause?: unknown; timeout?: boolean }) {
    super(options?.timeout ? "ERR_STORE_TIMEOUT" : "ERR_STORE", message, options);
  }
}

/** `acquire` could not get a permit within `maxWaitMs` (or the request can never pass). */
export class WaitTimeoutError extends SluiceError {
  constructor(message: string) {
    super("ERR_WAIT_TIMEOUT", message);
  }
}

/** A throttle refused a job: `maxQueued` jobs are already waiting in this process. */
export class QueueFullError extends SluiceError {
  constructor(message: string) {
    super("ERR_QUEUE_FULL", message);
  }
}

/** A throttle was closed: a job scheduled afterwards, or still queued when it closed without draining. */
export class ThrottleClosedError extends SluiceError {
  constructor(message: string) {
    super("ERR_THROTTLE_CLOSED", message);
  }
}

/**
 * A running throttle job lost its concurrency slot: a renewal found its lease gone (it expired,
 * or the store lost it and the slot went to another job), or no renewal reached the store for
 * `leaseMs`. The job's signal aborts with it; another job may now hold the slot.
 */
export class LeaseLostError extends SluiceError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("ERR_LEASE_LOST", message, options);
  }
}

/** True when `error` is a sluice error, even across realms or duplicated package copies. */
export function isSluiceError(error: unknown): error is SluiceError {
  return (
    error instanceof SluiceError ||
    (error instanceof Error &&
      typeof (error as { code?: unknown }).code === "string" &&
      /^ERR_(INVALID_SPEC|INVALID_ARGUMENT|UNKNOWN_RULE|DUPLICATE_RULE|STORE|STORE_TIMEOUT|WAIT_TIMEOUT|QUEUE_FULL|THROTTLE_CLOSED|LEASE_LOST)$/.test(
        (error as unknown as { code: string }).code,
      ))
  );
}
