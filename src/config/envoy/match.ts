/**
 * Matching one request descriptor against the tree, as envoyproxy/ratelimit's GetLimit does:
 * at each level the most specific descriptor wins (exact value, then the first wildcard value
 * that matches, then key only); a limit applies only if it sits at the request's last entry.
 */
import { type EnvoyConfig, type EnvoyLevel, type EnvoyNode, isEmptyLevel } from "./model.ts";

/** A request descriptor entry. */
export interface DescriptorEntry {
  key: string;
  value: string;
}

/** What a descriptor matched. */
export interface EnvoyMatch {
  /** The descriptor holding the limit. */
  node: EnvoyNode;
  /** The counter within the node's rule: the request's values (a shared wildcard's pattern). */
  key: string;
  /** Metrics path: the node's path, or with `detailed_metric` the request's own key_values. */
  stat: string;
}

/** The limit `entries` fall under in `domain`, or undefined (unknown domain, no match). */
export function matchDescriptor(
  config: EnvoyConfig,
  domain: string,
  entries: readonly DescriptorEntry[],
): EnvoyMatch | undefined {
  const root = config.domains.get(domain);
  if (root === undefined) return undefined;
  let level: EnvoyLevel = root;
  const values: string[] = [];
  let found: EnvoyNode | undefined;
  for (const [i, entry] of entries.entries()) {
    let node: EnvoyNode | undefined = level.exact.get(`${entry.key}\0${entry.value}`);
    if (node === undefined && level.wildcards.size > 0) node = level.wildcards.match(entry.key, entry.value);
    node ??= level.keyOnly.get(entry.key);
    if (node === undefined) break;
    values.push(node.shareThreshold && node.wildcard !== undefined ? (node.value as string) : entry.value);
    if (node.limit !== undefined && i === entries.length - 1) found = node;
    if (isEmptyLevel(node.children)) break;
    level = node.children;
  }
  if (found === undefined) return undefined;
  const stat = found.detailedMetric
    ? `${domain}.${entries.map((e) => (e.value === "" ? e.key : `${e.key}_${e.value}`)).join(".")}`
    : found.path;
  return { node: found, key: JSON.stringify(values), stat };
}
