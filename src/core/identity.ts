/**
 * Who a bound rule is. Limiters, service rules and tiers carry this structured value; it is
 * rendered to text once (`identityText`), for the store's edge (key namespaces, wire frames),
 * and nothing parses the text back.
 */

/** A rule's identity within a store: a named limiter, an unnamed spec, or a service rule (and tier). */
export type RuleIdentity =
  | { readonly kind: "name"; readonly name: string }
  | { readonly kind: "spec"; readonly shape: string }
  | { readonly kind: "rule"; readonly name: string; readonly tier?: string | undefined };

// Service rule and tier names are user text: encoded so that `:` in a name cannot forge a tier.
const encode = encodeURIComponent;

/** The identity as the text stores namespace records by (`name:…`, `spec:…`, `rule:…[:tier:…]`). */
export function identityText(identity: RuleIdentity): string {
  switch (identity.kind) {
    case "name":
      return `name:${identity.name}`;
    case "spec":
      return `spec:${identity.shape}`;
    case "rule":
      return identity.tier === undefined
        ? `rule:${encode(identity.name)}`
        : `rule:${encode(identity.name)}:tier:${encode(identity.tier)}`;
  }
}

/** The rule name reports group by: a service rule's or a named limiter's name, else "default". */
export function reportedRule(identity: RuleIdentity): string {
  return identity.kind === "spec" ? "default" : identity.name;
}

/** The identity in words, for messages (bounded: a spec's shape can be long). */
export function describeIdentity(identity: RuleIdentity): string {
  switch (identity.kind) {
    case "name":
      return `limiter ${JSON.stringify(identity.name)}`;
    case "spec":
      return `the limiter for ${identity.shape.slice(0, 120)}`;
    case "rule":
      return identity.tier === undefined
        ? `rule ${JSON.stringify(identity.name)}`
        : `rule ${JSON.stringify(identity.name)} tier ${JSON.stringify(identity.tier)}`;
  }
}
