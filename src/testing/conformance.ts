/**
 * The conformance kit's drivers: `storeConformance` proves a `Store` (driven through
 * RateLimiterService, as applications use it), `serviceConformance` a remote rule service (the
 * client of `sluice serve`). Both yield named cases `{ name, run() }` that any test runner can
 * drive; each case gets its own ManualClock at the kit's epoch and its own store or service.
 */
import type { Decision } from "../algorithms/decision.ts";
import { ManualClock } from "../core/clock.ts";
import { isSluiceError } from "../core/errors.ts";
import type { Store } from "../core/store.ts";
import { RateLimiterService } from "../service.ts";
import { scripts } from "./cases.ts";
import { check, expectDecision, figures, show } from "./compare.ts";
import { RuleOracle } from "./oracle.ts";
import { featuresOf, runScript, type Script } from "./script.ts";
import type { ConformanceRule, ConformanceSubject, Feature } from "./subject.ts";

/** One case: run it (it rejects with an Error naming the step and both answers), or skip it for `skip`. */
export interface ConformanceCase {
  /** What the case proves. */
  readonly name: string;
  /** Calls beyond check/peek/reset the case needs. */
  readonly needs: readonly Feature[];
  /** Why the subject cannot run this case (the runner should report it as skipped with this reason). */
  readonly skip?: string;
  /** Runs the case on a fresh store or service. */
  run(): Promise<void>;
}

/** 2026-12-01T00:00:00Z: cases run at a present-day epoch, where float rounding bites. */
export const CONFORMANCE_EPOCH = Date.UTC(2026, 11, 1);

/** Options of `storeConformance`. */
export interface StoreConformanceOptions<S extends Store = Store> {
  /** Names the store in case names. */
  name: string;
  /** A fresh, empty store (a new prefix or namespace per call); `clock` is the case's ManualClock. */
  create(clock: ManualClock): S | Promise<S>;
  /** Releases a store `create` made (after its case, passed or failed). */
  dispose?(store: S): void | Promise<void>;
  /**
   * A store whose backend fails on every call (a closed port, say), for the failure case: its
   * checks must be answered by its failure policy (a Decision with `failure`), never hang or throw.
   */
  failing?(clock: ManualClock): S | Promise<S>;
  /** The instant cases start from (default CONFORMANCE_EPOCH). */
  epoch?: number;
}

/** Options of `serviceConformance`. */
export interface ServiceConformanceOptions<T extends ConformanceSubject = ConformanceSubject> {
  /** Names the service in case names. */
  name: string;
  /** A service deciding `rules` on `clock`, and a client of it (a fresh rule namespace per call). */
  open(clock: ManualClock, rules: Record<string, ConformanceRule>): T | Promise<T>;
  /** Closes what `open` made. */
  close?(subject: T): void | Promise<void>;
  /**
   * The calls the subject has beyond check, peek and reset ("refund", "receipts", "updateRule",
   * "flexible"); cases needing others are yielded with `skip` naming what is missing.
   */
  supports?: readonly Feature[];
  /** A subject whose service is unreachable, for the failure case (answers by its failure policy). */
  failing?(clock: ManualClock, rules: Record<string, ConformanceRule>): T | Promise<T>;
  /** The instant cases start from (default CONFORMANCE_EPOCH). */
  epoch?: number;
}

/** The rules the concurrency and failure cases use. */
const CONCURRENT_RULES: Record<string, ConformanceRule> = {
  "fixed-window": { spec: { algorithm: "fixed-window", limit: 25, windowMs: 60_000 } },
  "sliding-log": { spec: { algorithm: "sliding-log", limit: 25, windowMs: 60_000 } },
  gcra: { spec: { algorithm: "gcra", limit: 20, periodMs: 60_000 } },
  pair: {
    spec: [
      { algorithm: "token-bucket", capacity: 30, refillPerSecond: 1 },
      { algorithm: "sliding-window", limit: 22, windowMs: 60_000 },
    ],
  },
};

/** 40 calls issued at once on one key of each rule: exactly the reference's answers, in any order. */
async function concurrency(subject: ConformanceSubject, epoch: number): Promise<void> {
  for (const [rule, { spec }] of Object.entries(CONCURRENT_RULES)) {
    const oracle = new RuleOracle(spec as never);
    const want = Array.from({ length: 40 }, () => show(figures(oracle.check(epoch, 1)))).sort();
    const got = await Promise.all(Array.from({ length: 40 }, () => subject.check(rule, "hot")));
    const seen = got.map((d) => show(figures(d))).sort();
    const allowed = got.filter((d) => d.allowed).length;
    const limit = oracle.peek(epoch, 1).limit;
    check(
      seen.join("\n") === want.join("\n"),
      `concurrency on ${rule}: ${allowed} of 40 allowed (limit ${limit}); answers differ from one-at-a-time:\n  expected ${want.join("\n           ")}\n  got      ${seen.join("\n           ")}`,
    );
    expectDecision(await subject.peek(rule, "hot"), oracle.peek(epoch, 1), `concurrency on ${rule}, peek after`);
  }
}

/** Every call of a failing subject is answered by its policy: a Decision carrying `failure`. */
async function failure(subject: ConformanceSubject): Promise<void> {
  for (const call of ["check", "peek"] as const) {
    let d: Decision;
    try {
      d = await subject[call]("fixed-window", "k");
    } catch (error) {
      throw new Error(`a failing store's ${call} threw (${String(error)}) instead of answering by its policy`);
    }
    const policy = d.failure?.policy;
    check(policy !== undefined, `a failing store's ${call} answered ${show(d)} without \`failure\``);
    check(
      isSluiceError(d.failure?.error),
      `a failure's error should be a StoreError (got ${String(d.failure?.error)})`,
    );
    if (policy !== "fallback")
      check(d.allowed === (policy === "allow"), `policy ${policy} answered allowed: ${d.allowed}`);
  }
}

/**
 * Rule names unique to one case of one run: stores shared between cases (a node:cluster
 * primary, one Redis prefix) never see another case's state under the same rule name.
 */
function namespace(): (rule: string) => string {
  const run = Math.random().toString(36).slice(2, 10);
  return (rule) => `kit-${run}-${rule}`;
}

/** `script` with its rule names passed through `name`. */
function renamed(script: Script, name: (rule: string) => string): Script {
  return {
    name: script.name,
    rules: renamedRules(script.rules, name),
    steps: script.steps.map((step) => ({ ...step, rule: name(step.rule) })),
  };
}

/** `rules` with their names passed through `name`. */
function renamedRules(
  rules: Record<string, ConformanceRule>,
  name: (rule: string) => string,
): Record<string, ConformanceRule> {
  return Object.fromEntries(Object.entries(rules).map(([rule, decl]) => [name(rule), decl]));
}

/** A subject taking plain rule names, calling `subject` with them passed through `name`. */
function plainNames(subject: ConformanceSubject, name: (rule: string) => string): ConformanceSubject {
  return {
    check: (rule, key, options) => subject.check(name(rule), key, options),
    peek: (rule, key, options) => subject.peek(name(rule), key, options),
    reset: (rule, key) => subject.reset(name(rule), key),
  };
}

/** A store's subject: a RateLimiterService on the store and clock, with the case's rules. */
function serviceOn(
  store: Store,
  clock: ManualClock,
  rules: Record<string, ConformanceRule>,
): RateLimiterService<Store> {
  const service = new RateLimiterService<Store>({ store, clock });
  for (const [name, rule] of Object.entries(rules)) {
    service.addRule(name, rule.spec, {
      ...(rule.ban === undefined ? {} : { ban: rule.ban }),
      ...(rule.tiers === undefined ? {} : { tiers: rule.tiers }),
    });
  }
  return service;
}

/** Limiters refuse rate-limiter-flexible's calls with a StoreError on a store that does not decide them. */
async function refusesFlexible(service: RateLimiterService<Store>, rule: string): Promise<void> {
  for (const call of [() => service.penalty(rule, "k", { cost: 1 }), () => service.get(rule, "k")]) {
    let error: unknown;
    try {
      await call();
    } catch (e) {
      error = e;
    }
    check(
      isSluiceError(error) && error.code === "ERR_STORE",
      `a store without flexibleCalls must be refused with StoreError (got ${String(error)})`,
    );
  }
}

/** The cases proving `options.create`'s stores. */
export function storeConformance<S extends Store>(options: StoreConformanceOptions<S>): ConformanceCase[] {
  const epoch = options.epoch ?? CONFORMANCE_EPOCH;
  const withStore = async (
    make: (clock: ManualClock) => S | Promise<S>,
    body: (store: S, clock: ManualClock) => Promise<void>,
  ) => {
    const clock = new ManualClock(epoch);
    const store = await make(clock);
    try {
      await body(store, clock);
    } finally {
      await options.dispose?.(store);
    }
  };
  const scripted = scripts().map((script): ConformanceCase => {
    const needs = featuresOf(script);
    return {
      name: `${options.name}: ${script.name}`,
      needs,
      run: () =>
        withStore(options.create, async (store, clock) => {
          const named = renamed(script, namespace());
          const service = serviceOn(store, clock, named.rules);
          if (needs.includes("flexible") && store.flexibleCalls !== true) {
            return refusesFlexible(service, Object.keys(named.rules)[0] as string);
          }
          await runScript(named, service as ConformanceSubject, clock, epoch, { expectAt: true });
        }),
    };
  });
  const failing = options.failing;
  return [
    ...scripted,
    {
      name: `${options.name}: concurrency: 40 concurrent calls on one key are decided one at a time`,
      needs: [],
      run: () =>
        withStore(options.create, (store, clock) => {
          const name = namespace();
          return concurrency(plainNames(serviceOn(store, clock, renamedRules(CONCURRENT_RULES, name)), name), epoch);
        }),
    },
    {
      name: `${options.name}: failures: a failing store answers by its policy`,
      needs: ["failure"],
      ...(failing === undefined
        ? { skip: "no `failing` store given (an in-process store has no backend to lose)" }
        : {}),
      run: () =>
        withStore(failing ?? options.create, (store, clock) => {
          const name = namespace();
          return failure(plainNames(serviceOn(store, clock, renamedRules(CONCURRENT_RULES, name)), name));
        }),
    },
  ];
}

/** The cases proving a remote rule service through `options.open`'s subjects. */
export function serviceConformance<T extends ConformanceSubject>(
  options: ServiceConformanceOptions<T>,
): ConformanceCase[] {
  const epoch = options.epoch ?? CONFORMANCE_EPOCH;
  const withSubject = async (
    make: ServiceConformanceOptions<T>["open"],
    rules: Record<string, ConformanceRule>,
    body: (subject: T, clock: ManualClock) => Promise<void>,
  ) => {
    const clock = new ManualClock(epoch);
    const subject = await make(clock, rules);
    try {
      await body(subject, clock);
    } finally {
      await options.close?.(subject);
    }
  };
  const supports = new Set(options.supports ?? []);
  const lacks = (needs: readonly Feature[]): string | undefined => {
    const missing = needs.filter((f) => !supports.has(f));
    return missing.length === 0 ? undefined : `the subject has no ${missing.join(", ")}`;
  };
  return [
    ...scripts().map((script: Script): ConformanceCase => {
      const needs = featuresOf(script);
      const skip = lacks(needs);
      return {
        name: `${options.name}: ${script.name}`,
        needs,
        ...(skip === undefined ? {} : { skip }),
        run: () =>
          withSubject(options.open, script.rules, (subject, clock) =>
            runScript(script, subject, clock, epoch, { expectAt: false }),
          ),
      };
    }),
    {
      name: `${options.name}: concurrency: 40 concurrent calls on one key are decided one at a time`,
      needs: [],
      run: () => withSubject(options.open, CONCURRENT_RULES, (subject) => concurrency(subject, epoch)),
    },
    {
      name: `${options.name}: failures: an unreachable service is answered by the failure policy`,
      needs: ["failure"],
      ...(options.failing === undefined ? { skip: "no `failing` subject given" } : {}),
      run: () => withSubject(options.failing ?? options.open, CONCURRENT_RULES, (subject) => failure(subject)),
    },
  ];
}
