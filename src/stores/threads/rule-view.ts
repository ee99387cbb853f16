/**
 * A thread's compiled copy of the rules in the shared registry: a rule is compiled again only
 * when another thread published a new spec for it (its version moved).
 */
import { StoreError } from "../../core/errors.ts";
import { type CompiledRule, compileRule } from "../../core/rule.ts";
import { widthCode } from "../compact/shared-bucket.ts";
import { type Codec, codecFor, widthFor } from "./codec.ts";
import type { Registry } from "./registry.ts";

/** What a thread keeps about a registered rule: the spec version it compiled. */
export interface RuleView {
  version: number;
  rule: CompiledRule;
  /** The codec of the rule's new records, `width` words wide. */
  codec: Codec;
  /** Words of the rule's new records (codec.ts `widthFor`). */
  width: number;
  /** The width bits of the rule's new records' tags (compact/shared-bucket.ts `widthCode`, shifted). */
  tagBits: number;
  /**
   * The codec of a record of the rule `width` words wide (compact/shared-bucket.ts): records keep
   * the width they were written with, so a narrower one was written before a limit was raised.
   */
  codecAt(width: number): Codec;
}

/** This thread's compiled rules, by registry index. */
export class RuleViews {
  readonly #registry: Registry;
  readonly #recordWords: number;
  readonly #views = new Map<number, RuleView>();

  /** Views of `registry`'s rules, in records of at most `recordWords` words. */
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
    const width = widthFor(rule, this.#recordWords);
    const codec = codecFor(rule, width);
    const others = new Map<number, Codec>();
    const view: RuleView = {
      version,
      rule,
      codec,
      width,
      tagBits: widthCode(width, this.#recordWords) << 16,
      codecAt: (w) => {
        if (w === width) return codec;
        let c = others.get(w);
        if (c === undefined) {
          c = codecFor(rule, w, w < width);
          others.set(w, c);
        }
        return c;
      },
    };
    this.#views.set(index, view);
    return view;
  }
}
