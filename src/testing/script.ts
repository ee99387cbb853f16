/**
 * A conformance case as a script: steps at fixed instants (ms after the case's epoch), run on
 * the subject and on the independent reference (`RuleOracle`) side by side; every answer must
 * carry the reference's figures. State is per (rule, tier, key), as on every store.
 */
import type { Decision } from "../algorithms/decision.ts";
import type { BanPolicy } from "../core/ban.ts";
import type { ManualClock } from "../core/clock.ts";
import type { LimitSpec } from "../core/spec.ts";
import { check, expectDecision, show } from "./compare.ts";
import { RuleOracle } from "./oracle.ts";
import type { ConformanceRule, ConformanceSubject, Feature } from "./subject.ts";

/** Where a step acts: a rule, a key (default "k") and a tier. */
interface Target {
  /** Ms after the case's epoch at which the step runs (the clock is set there first). */
  t: number;
  rule: string;
  key?: string;
  tier?: string;
}

/** One step of a script. */
export type Step =
  | (Target & { do: "check" | "peek"; cost?: number })
  | (Target & { do: "refund"; cost?: number; receipt?: number })
  | (Target & { do: "reset" })
  | (Target & { do: "update"; spec: LimitSpec | LimitSpec[]; ban?: BanPolicy })
  | (Target & { do: "penalty"; cost?: number })
  | (Target & { do: "block"; ms: number })
  | (Target & { do: "get" })
  | (Target & { do: "release" | "renew"; cost?: number; receipt: number });

/** A scripted case: rules, then steps in order. */
export interface Script {
  name: string;
  rules: Record<string, ConformanceRule>;
  steps: Step[];
}

/** Calls beyond check/peek/reset that a script uses. */
export function featuresOf(script: Script): Feature[] {
  const needs = new Set<Feature>();
  for (const s of script.steps) {
    if (s.do === "refund") needs.add(s.receipt === undefined ? "refund" : "receipts");
    if (s.do === "update") needs.add("updateRule");
    if (s.do === "penalty" || s.do === "block" || s.do === "get") needs.add("flexible");
    if (s.do === "release" || s.do === "renew") needs.add("leases");
  }
  return [...needs];
}

/** How a run reads decisions: whether they carry `at` (a limiter's clock decided them). */
export interface RunOptions {
  /** Check `decision.at` is the instant of the step (store mode: the limiter's ManualClock). */
  expectAt: boolean;
}

/** Runs `script` on `subject` at `epoch`, setting `clock` before each step. */
export async function runScript(
  script: Script,
  subject: ConformanceSubject,
  clock: ManualClock,
  epoch: number,
  options: RunOptions,
): Promise<void> {
  const oracles = new Map<string, RuleOracle>();
  const specs = new Map<string, ConformanceRule>(Object.entries(script.rules));
  const oracleFor = (s: Step): RuleOracle => {
    const id = `${s.rule}\u0000${s.tier ?? ""}\u0000${s.key ?? "k"}`;
    let o = oracles.get(id);
    if (o === undefined) {
      const rule = specs.get(s.rule) as ConformanceRule;
      const spec = s.tier === undefined ? rule.spec : (rule.tiers?.[s.tier] as LimitSpec | LimitSpec[]);
      o = new RuleOracle(spec as never, rule.ban);
      oracles.set(id, o);
    }
    return o;
  };
  for (const [i, s] of script.steps.entries()) {
    const now = epoch + s.t;
    clock.set(now);
    const key = s.key ?? "k";
    const where = `${script.name}, step ${i + 1} (${show(s)})`;
    const tier = s.tier === undefined ? {} : { tier: s.tier };
    let got: Decision | null;
    let want: Decision | null;
    switch (s.do) {
      case "check":
      case "peek": {
        const cost = s.cost ?? 1;
        got = await subject[s.do](s.rule, key, { cost, ...tier });
        want = s.do === "check" ? oracleFor(s).check(now, cost) : oracleFor(s).peek(now, cost);
        break;
      }
      case "refund": {
        const cost = s.cost ?? 1;
        const at = s.receipt === undefined ? undefined : epoch + s.receipt;
        const refund = subject.refund as NonNullable<ConformanceSubject["refund"]>;
        got = await refund.call(subject, s.rule, key, at === undefined ? { cost } : { cost, at });
        want = oracleFor(s).refund(now, cost, at);
        break;
      }
      case "reset": {
        await subject.reset(s.rule, key);
        for (const id of [...oracles.keys()])
          if (id.startsWith(`${s.rule}\u0000`) && id.endsWith(`\u0000${key}`)) oracles.delete(id);
        continue;
      }
      case "update": {
        const update = subject.updateRule as NonNullable<ConformanceSubject["updateRule"]>;
        const ban = s.ban === undefined ? {} : { ban: s.ban };
        await update.call(subject, s.rule, s.spec, ban);
        specs.set(s.rule, { spec: s.spec, ...ban });
        for (const [id, o] of oracles) {
          if (id.startsWith(`${s.rule}\u0000\u0000`)) oracles.set(id, o.respec(s.spec as never, s.ban));
        }
        continue;
      }
      case "penalty": {
        const cost = s.cost ?? 1;
        const penalty = subject.penalty as NonNullable<ConformanceSubject["penalty"]>;
        got = await penalty.call(subject, s.rule, key, { cost });
        want = oracleFor(s).penalty(now, cost);
        break;
      }
      case "block": {
        const block = subject.block as NonNullable<ConformanceSubject["block"]>;
        got = await block.call(subject, s.rule, key, s.ms);
        want = oracleFor(s).block(now, s.ms);
        break;
      }
      case "release":
      case "renew": {
        const cost = s.cost ?? 1;
        const at = epoch + s.receipt;
        const call = subject[s.do] as NonNullable<ConformanceSubject["release"]>;
        got = await call.call(subject, s.rule, key, { cost, at });
        want = oracleFor(s)[s.do](now, cost, at);
        break;
      }
      case "get": {
        const get = subject.get as NonNullable<ConformanceSubject["get"]>;
        got = await get.call(subject, s.rule, key);
        want = oracleFor(s).get(now);
        if (want === null || got === null) {
          check(got === want, `${where}: expected ${show(want)}, got ${show(got)}`);
          continue;
        }
        break;
      }
    }
    expectDecision(got, want, where);
    if (options.expectAt) {
      const at = (got as Decision).at;
      check(at === now, `${where}: decision.at should be ${now} (the limiter's clock), got ${String(at)}`);
    }
  }
}
