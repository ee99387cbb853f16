/**
 * Per-node failure state. On Cluster each master (the current owner of a slot) has its own
 * circuit breaker and clock offset, so a paused, failing or failing-over master affects only
 * the checks for its own keys; the checks for keys on healthy masters go on being decided.
 * Standalone Redis is one node.
 */
import { Breaker, type BreakerOptions } from "../remote/breaker.ts";
import type { RedisCommands } from "./client.ts";

/** How long one window of clock-offset samples lasts (see NodeState). */
const OFFSET_WINDOW_MS = 10_000;

/** What the store knows of one Redis node. */
export class NodeState {
  /** `host:port` of the node ("" on standalone). */
  readonly address: string;
  /** Its circuit breaker. */
  readonly breaker: Breaker;
  /**
   * Lower bounds of (server clock − local clock) in ms: the server read its clock before the
   * reply reached us, so each `serverMs − receivedAt` can only be low (by the reply's way back
   * and any event-loop lag). The best recent bound is the greatest: the maximum over the current
   * and the previous window of OFFSET_WINDOW_MS, so a bound from before a server clock change
   * ages out. Until the node first answers, the clocks are assumed to agree (offset 0), which
   * holds to a few ms on machines synced by NTP; a call refused on that assumption is sent
   * again once the reply has taught the true offset (see the batcher).
   */
  #current: number | undefined;
  #previous: number | undefined;
  #windowEnds = 0;

  constructor(address: string, breaker: Breaker) {
    this.address = address;
    this.breaker = breaker;
  }

  /** Whether a reply has taught this node's clock offset (else offset 0 is assumed). */
  get known(): boolean {
    return this.#current !== undefined;
  }

  /** Records a reply's server time, read at or before local time `receivedAt`. */
  observe(serverMs: number, receivedAt: number): void {
    const sample = serverMs - receivedAt;
    if (receivedAt >= this.#windowEnds) {
      this.#previous = this.#current;
      this.#current = sample;
      this.#windowEnds = receivedAt + OFFSET_WINDOW_MS;
    } else if (this.#current === undefined || sample > this.#current) {
      this.#current = sample;
    }
  }

  /**
   * The deadline (server clock, as script text) for a call first sent at local `sentAt` that
   * must not start after local `sentAt + budgetMs`.
   */
  deadline(sentAt: number, budgetMs: number): string {
    const offset = this.#previous === undefined ? this.#current : Math.max(this.#previous, this.#current ?? -Infinity);
    return String(Math.floor(sentAt + budgetMs + (offset ?? 0)));
  }
}

/** The nodes of one store, found by slot. */
export class Nodes {
  readonly #commands: RedisCommands;
  readonly #options: BreakerOptions | false | undefined;
  readonly #byAddress = new Map<string, NodeState>();
  #single: NodeState | undefined;

  constructor(commands: RedisCommands, options: BreakerOptions | false | undefined) {
    this.#commands = commands;
    this.#options = options;
  }

  /** The node currently serving `slot` (the client's own slot map; always the one node on standalone). */
  forSlot(slot: number): NodeState {
    if (!this.#commands.cluster) {
      this.#single ??= new NodeState("", new Breaker(this.#options));
      return this.#single;
    }
    const address = this.#commands.nodeOf(slot);
    let node = this.#byAddress.get(address);
    if (node === undefined) {
      node = new NodeState(address, new Breaker(this.#options));
      this.#byAddress.set(address, node);
    }
    return node;
  }

  /** True while any node's breaker is open. */
  get anyOpen(): boolean {
    if (this.#single?.breaker.open) return true;
    for (const node of this.#byAddress.values()) if (node.breaker.open) return true;
    return false;
  }

  /** Addresses of the nodes whose breaker is open now. */
  openNodes(): string[] {
    const open: string[] = [];
    if (this.#single?.breaker.open) open.push(this.#single.address);
    for (const node of this.#byAddress.values()) if (node.breaker.open) open.push(node.address);
    return open;
  }
}
