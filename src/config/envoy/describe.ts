/**
 * The Envoy config in words, for `GET /v1/rules`, the status page and `sluice check-config
 * --envoy-config`: per domain, every descriptor path that carries a limit.
 */
import { describeRule } from "../describe.ts";
import type { EnvoyConfig, EnvoyLevel, EnvoyNode } from "./model.ts";

/** One limited descriptor path of a domain. */
export interface EnvoyDescriptorInfo {
  /** The key/value path, e.g. `[{ key: "remote_address" }, { key: "path", value: "/files/*" }]`. */
  path: Array<{ key: string; value?: string }>;
  /** `requests_per_unit` per `unit`, or `unlimited`. */
  limit: string;
  /** The limit's `name`, or null. */
  name: string | null;
  shadowMode: boolean;
  /** The sluice algorithm counting it, in words (null when nothing is counted). */
  summary: string | null;
}

/** Every domain (sorted) with its limited descriptors (depth first, file order). */
export function describeEnvoy(config: EnvoyConfig): Array<{ domain: string; descriptors: EnvoyDescriptorInfo[] }> {
  const out: Array<{ domain: string; descriptors: EnvoyDescriptorInfo[] }> = [];
  for (const domain of [...config.domains.keys()].sort()) {
    const descriptors: EnvoyDescriptorInfo[] = [];
    const walk = (level: EnvoyLevel, path: EnvoyDescriptorInfo["path"]) => {
      for (const node of [...level.exact.values(), ...level.wildcards.nodes, ...level.keyOnly.values()]) {
        const here = [...path, node.value === undefined ? { key: node.key } : { key: node.key, value: node.value }];
        if (node.limit !== undefined) descriptors.push(info(node, here));
        walk(node.children, here);
      }
    };
    walk(config.domains.get(domain) as EnvoyLevel, []);
    out.push({ domain, descriptors });
  }
  return out;
}

function info(node: EnvoyNode, path: EnvoyDescriptorInfo["path"]): EnvoyDescriptorInfo {
  const limit = node.limit as NonNullable<EnvoyNode["limit"]>;
  return {
    path,
    limit: limit.unlimited ? "unlimited" : `${limit.requestsPerUnit} per ${limit.unit}`,
    name: limit.name === "" ? null : limit.name,
    shadowMode: node.shadowMode,
    summary: limit.spec === undefined ? null : describeRule([limit.spec]),
  };
}
