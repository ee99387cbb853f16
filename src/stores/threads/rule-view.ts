/**
 * A thread's compiled copy of the rules in the shared registry: a rule is compiled again only
 * when another thread published a new spec for it (its version moved).
 */
import { StoreError } from "../../core/errors.ts";
import { type CompiledRule, compileRule } from "../../core/rule.ts";
import { type Codec, codecFor } from "./codec.ts";
import type { Registry } from "./registry.ts";

/** What a thread keeps about a registered rule: the spec version it compiled. */
export interface RuleView {
  version: number;
  rule: CompiledRule;
  codec: Codec;
}

/** This thread's compiled rules, by registry index. */
export class RuleViews {
  readonly #registry: Registry;
  readonly #recordWords: number;
  readonly #views = new Map<number, RuleView>();

  /** Views of `registry`'s rules, in records of `recordWords` words. */
  constructor(registry: Registry, recordWords: number) {
    this.#registry = registry;
    this.#recordWords = recordWords;
  }

  /** Rule `index` as currently published (compiled again when another thread changed it). */
  view(index: number): RuleView {
    const version = this.#registry.version(index);
    const cached = this.#views.get(index);
    if (cached !== undefined && cached.version === version) return cached;
    const text = this.#registry.spec(index);
    if (text === undefined) throw new StoreError(`SharedMemoryStore: rule #${index} has no spec yet`);
    const { specs, ban } = JSON.parse(text);
    const rule = compileRule(specs, ban ?? undefined);
    const view = { version, rule, codec: codecFor(rule, this.#recordWords) };
    this.#views.set(index, view);
    return view;
  }
}
