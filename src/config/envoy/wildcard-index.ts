/**
 * The wildcard descriptors of one level, indexed so that finding the first (in file order)
 * whose pattern matches a request value costs in proportion to the value, not to the number of
 * wildcards: a flood of requests against thousands of wildcard values must not scan them all.
 *
 * A pattern `pre*mid*suf` is filed by its key, then its literal prefix (before the first `*`),
 * then its literal suffix (after the last `*`). A value looks up only the prefixes and suffixes
 * of the lengths that occur, so at most `value.length + 1` map lookups of each, and tests the
 * middle (`*mid*`, rare) only on patterns whose prefix and suffix both matched.
 */
import type { EnvoyNode } from "./model.ts";

/** Patterns sharing one literal prefix, by literal suffix. */
interface PrefixBucket {
  bySuffix: Map<string, EnvoyNode[]>;
  /** The distinct suffix lengths of `bySuffix`, ascending. */
  suffixLengths: number[];
}

/** The patterns of one descriptor key, by literal prefix. */
interface KeyIndex {
  byPrefix: Map<string, PrefixBucket>;
  /** The distinct prefix lengths of `byPrefix`, ascending. */
  prefixLengths: number[];
}

/** Where each node stands in file order (the first match wins). */
const ORDER = new WeakMap<EnvoyNode, number>();

function insertSorted(list: number[], n: number): void {
  let i = list.length;
  while (i > 0 && (list[i - 1] as number) > n) i--;
  if (list[i - 1] !== n) list.splice(i, 0, n);
}

/** The wildcard-valued descriptors of one level: in file order, and indexed for matching. */
export class WildcardIndex {
  /** In file order (listing, duplicates). */
  readonly nodes: EnvoyNode[] = [];
  readonly #byKey = new Map<string, KeyIndex>();

  /** Number of wildcard descriptors. */
  get size(): number {
    return this.nodes.length;
  }

  /** The node of `key` with exactly this pattern, if any. */
  find(key: string, pattern: string): EnvoyNode | undefined {
    const first = pattern.indexOf("*");
    const last = pattern.lastIndexOf("*");
    const list = this.#byKey
      .get(key)
      ?.byPrefix.get(pattern.slice(0, first))
      ?.bySuffix.get(pattern.slice(last + 1));
    return list?.find((n) => n.value === pattern);
  }

  /** Files `node` (its `value` holds a `*`), after every node added before it. */
  add(node: EnvoyNode): void {
    const pattern = node.value as string;
    const first = pattern.indexOf("*");
    const last = pattern.lastIndexOf("*");
    const prefix = pattern.slice(0, first);
    const suffix = pattern.slice(last + 1);
    ORDER.set(node, this.nodes.length);
    this.nodes.push(node);
    let keyIndex = this.#byKey.get(node.key);
    if (keyIndex === undefined) {
      keyIndex = { byPrefix: new Map(), prefixLengths: [] };
      this.#byKey.set(node.key, keyIndex);
    }
    let bucket = keyIndex.byPrefix.get(prefix);
    if (bucket === undefined) {
      bucket = { bySuffix: new Map(), suffixLengths: [] };
      keyIndex.byPrefix.set(prefix, bucket);
      insertSorted(keyIndex.prefixLengths, prefix.length);
    }
    let list = bucket.bySuffix.get(suffix);
    if (list === undefined) {
      list = [];
      bucket.bySuffix.set(suffix, list);
      insertSorted(bucket.suffixLengths, suffix.length);
    }
    list.push(node);
  }

  /** The first node in file order of `key` whose pattern matches `value`, if any. */
  match(key: string, value: string): EnvoyNode | undefined {
    const keyIndex = this.#byKey.get(key);
    if (keyIndex === undefined) return undefined;
    let best: EnvoyNode | undefined;
    let bestOrder = Number.POSITIVE_INFINITY;
    for (const p of keyIndex.prefixLengths) {
      if (p > value.length) break;
      const bucket = keyIndex.byPrefix.get(p === 0 ? "" : value.slice(0, p));
      if (bucket === undefined) continue;
      for (const s of bucket.suffixLengths) {
        // The prefix and the suffix may not overlap: `a*a` does not match "a".
        if (p + s > value.length) break;
        const list = bucket.bySuffix.get(s === 0 ? "" : value.slice(value.length - s));
        if (list === undefined) continue;
        for (const node of list) {
          const order = ORDER.get(node) as number;
          if (order >= bestOrder) break; // lists are in file order: the rest come later still
          // One `*` between a matching prefix and suffix matches anything; more need the pattern.
          if (hasOneStar(node) || (node.wildcard as RegExp).test(value)) {
            best = node;
            bestOrder = order;
            break;
          }
        }
      }
    }
    return best;
  }
}

function hasOneStar(node: EnvoyNode): boolean {
  const v = node.value as string;
  return v.indexOf("*") === v.lastIndexOf("*");
}
