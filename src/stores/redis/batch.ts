/**
 * One batch: the checks bound for one script call, and the scratch state used to build its
 * arguments (each rule's index in the call, whether every check is alike). It lives only as
 * long as the call, so nothing of it is left on the shared rule objects.
 */
import type { Decision } from "../../algorithms/decision.ts";
import type { Operation } from "../../core/decide-rule.ts";
import type { DecideFailed } from "../remote/failure-policy.ts";
import { recordKeyOf } from "./keys.ts";
import type { NodeState } from "./nodes.ts";
import type { ReplyLayout } from "./reply.ts";

/** The op codes of the script (check.lua; a block's cost is its ms). */
const OP_CODES: Record<Operation, string> = {
  check: "c",
  peek: "p",
  refund: "r",
  penalty: "x",
  block: "b",
  get: "g",
  release: "e",
  renew: "n",
};

/** What the batcher needs of a bound rule. */
export interface BatchRule extends ReplyLayout {
  /** The rule's script parameters: member count, ban policy, then code and three parameters per member. */
  readonly descriptor: readonly string[];
  /** Key infixes of a check (`prefix{tag}` + infix + user key): one, the record's. */
  readonly infixes: readonly string[];
  /** The decision of a check Redis could not make, by the rule's failure policy. */
  readonly fail: DecideFailed;
  /**
   * Whether the rule has a concurrency member: its decisions made on Redis `TIME` are stamped
   * with that reading (the `at` a lease's release and renewal name).
   */
  readonly leased: boolean;
  /** Told of each denial Redis made (for the deny cache); `sentAt` is the local monotonic send time. */
  denied(key: string, cost: number, now: number | undefined, sentAt: number, decision: Decision): void;
}

/** One check waiting for its batch's reply. */
export interface Pending {
  readonly rule: BatchRule;
  /** `prefix{tag}`: what the member infixes and the user key follow. */
  readonly head: string;
  readonly key: string;
  readonly cost: number;
  readonly op: Operation;
  /** The injected time, or undefined for Redis TIME. */
  readonly now: number | undefined;
  /** A refund's receipt (the instant its check was decided), sent as op `r<at>`. */
  readonly at?: number | undefined;
  readonly resolve: (value: Decision | Promise<Decision>) => void;
  /** Set once the check was answered (by Redis or by the policy), so it is never answered twice. */
  done: boolean;
}

/** Checks bound for one script call, with the scratch state used to build its arguments. */
export class Batch {
  readonly keys: string[] = [];
  readonly rules: string[] = [];
  /** Rule index, op, cost and now of every check, written out once the checks stop being uniform. */
  readonly checks: string[] = [];
  readonly pending: Pending[] = [];
  /** The node serving this batch's slot (its breaker and clock offset). */
  readonly node: NodeState;
  /** Index (as text) of each rule already in `rules`; the last one is cached. */
  readonly #index = new Map<BatchRule, string>();
  #lastRule: BatchRule | undefined;
  #lastIndex = "";
  /** While true, every check so far has the first check's rule index, op, cost and now (below). */
  #uniform = true;
  #rule0 = "";
  #op0 = "";
  #cost0 = "";
  #now0 = "";
  /**
   * The user keys of a uniform batch so far, while no key came twice: then the script reads every
   * record with one MGET ('*' in place of '=', check.lua). One rule, so distinct user keys are
   * distinct record keys. Undefined once the batch is not uniform or a key repeats.
   */
  #keys: Set<string> | undefined = new Set();

  constructor(node: NodeState) {
    this.node = node;
  }

  /** Checks in the batch (what the coalescer bounds by MAX_BATCH). */
  get size(): number {
    return this.pending.length;
  }

  /** Adds one check's keys and arguments. */
  add(p: Pending): void {
    const { rule } = p;
    let index: string;
    if (rule === this.#lastRule) {
      index = this.#lastIndex;
    } else {
      index = this.#index.get(rule) ?? "";
      if (index === "") {
        index = String(this.#index.size + 1);
        this.#index.set(rule, index);
        for (const d of rule.descriptor) this.rules.push(d);
      }
      this.#lastRule = rule;
      this.#lastIndex = index;
    }
    const key = recordKeyOf(p.key);
    for (const infix of rule.infixes) this.keys.push(p.head + infix + key);
    const costText = p.cost === 1 ? "1" : String(p.cost);
    // A receipt rides on the op code: a refund's `r<at>`, a release's `e<at>`, a renewal's `n<at>`.
    const opCode = p.at === undefined ? OP_CODES[p.op] : `${OP_CODES[p.op]}${p.at}`;
    const now = p.now === undefined ? "" : String(p.now);
    if (this.pending.length === 0) {
      this.#rule0 = index;
      this.#op0 = opCode;
      this.#cost0 = costText;
      this.#now0 = now;
    } else if (
      this.#uniform &&
      (index !== this.#rule0 || opCode !== this.#op0 || costText !== this.#cost0 || now !== this.#now0)
    ) {
      this.#uniform = false;
      for (let i = 0; i < this.pending.length; i++) this.checks.push(this.#rule0, this.#op0, this.#cost0, this.#now0);
    }
    if (!this.#uniform) {
      this.checks.push(index, opCode, costText, now);
      this.#keys = undefined;
    } else if (this.#keys !== undefined) {
      if (this.#keys.has(p.key)) this.#keys = undefined;
      else this.#keys.add(p.key);
    }
    this.pending.push(p);
  }

  /**
   * The script arguments: the deadline (see script.ts), grace, the rules, then the checks
   * (uniform ones once, marked '*' when their keys are distinct, else '='; see check.lua).
   */
  args(deadline: string, grace: string): string[] {
    const tail = this.#uniform
      ? [this.#keys === undefined ? "=" : "*", this.#rule0, this.#op0, this.#cost0, this.#now0]
      : this.checks;
    return [deadline, grace, String(this.#index.size)].concat(this.rules, tail);
  }
}
