/**
 * The rule registry every thread shares: a rule's identity (its binding id and shape) gets one
 * index, the same in every thread, and the rule's current specs are published beside it, so a
 * rule bound or updated in one thread is the rule all threads decide with.
 *
 * Lock-free and safe under thread death: texts are written into a private run of the arena
 * (taken with one atomic add) before a single compare-and-swap publishes them. Identities are
 * placed by open addressing and never removed, so two threads registering one identity
 * race for the same word and the loser finds the winner's entry. A thread that dies mid-way
 * leaves at most an unused run of arena bytes, or an entry whose spec the next binder writes.
 */
import { StoreError } from "../../core/errors.ts";
import { hashText } from "../compact/fingerprint.ts";
import { raiseInstant, readInstant } from "./instant-word.ts";
import { H, type Layout, type Views } from "./layout.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The shared rule table of one store. */
export class Registry {
  readonly #views: Views;
  readonly #layout: Layout;

  constructor(views: Views, layout: Layout) {
    this.#views = views;
    this.#layout = layout;
  }

  /** The index of `identity`, registering it if no thread has. */
  indexOf(identity: string): number {
    const { W } = this.#views;
    const { maxRules, ruleIdBase } = this.#layout;
    const start = hashText(identity) % maxRules;
    let mine = 0n;
    for (let probe = 0; probe < maxRules; probe++) {
      const index = (start + probe) % maxRules;
      let word = Atomics.load(W, ruleIdBase + index);
      if (word === 0n) {
        if (mine === 0n) mine = this.#write(identity, true);
        word = Atomics.compareExchange(W, ruleIdBase + index, 0n, mine);
        if (word === 0n) return index;
      }
      if (this.#read(word) === identity) return index;
    }
    throw new StoreError(
      `SharedMemoryStore: the rule registry is full (${maxRules} rules); create the store with a larger \`maxRules\``,
    );
  }

  /**
   * Publishes `spec` (a JSON text) as rule `index`'s current spec (the arena is written only when
   * it changed), then bumps the version every thread compares. The bump happens even for an
   * unchanged text: a thread killed between storing a spec and announcing it is then made good
   * by the next bind of that rule, in whatever thread.
   */
  publish(index: number, spec: string): void {
    const { W, I } = this.#views;
    const at = this.#layout.ruleSpecBase + index;
    const current = Atomics.load(W, at);
    if (current === 0n || this.#read(current) !== spec) Atomics.store(W, at, this.#write(spec, false));
    Atomics.add(I, this.#layout.ruleVersionBase + index, 1);
  }

  /** Rule `index`'s spec version (bumped by every publish). */
  version(index: number): number {
    return Atomics.load(this.#views.I, this.#layout.ruleVersionBase + index);
  }

  /**
   * Rule `index`'s spec version by a plain read: the check made on every decision, where an
   * `Atomics` call costs more than the rest of the check. An aligned 32-bit read never tears, and
   * a read that sees a new version goes on to `version` and the spec through `Atomics` (rule-view.ts);
   * a stale one only makes this decision the last one under the old spec.
   */
  peekVersion(index: number): number {
    return this.#views.I[this.#layout.ruleVersionBase + index] as number;
  }

  /**
   * Notes that a block on one of rule `index`'s keys runs until `until` (call before the block is
   * published): `blockUntil` then answers no earlier.
   */
  noteBlock(index: number, until: number): void {
    raiseInstant(this.#views.W, this.#layout.ruleBlockBase + index, until);
  }

  /** The latest end of a block placed on one of rule `index`'s keys (-Infinity: none was). */
  blockUntil(index: number): number {
    return readInstant(this.#views.W, this.#layout.ruleBlockBase + index);
  }

  /** Rule `index`'s current spec text, or undefined when none was published yet. */
  spec(index: number): string | undefined {
    const word = Atomics.load(this.#views.W, this.#layout.ruleSpecBase + index);
    return word === 0n ? undefined : this.#read(word);
  }

  /** Bytes of the arena used. */
  get arenaUsed(): number {
    return Math.min(Atomics.load(this.#views.I, H.arenaCursor), this.#layout.arenaBytes);
  }

  /**
   * Copies `text` into a fresh run of the arena; returns its word (offset + 1 above, length below).
   * `newRule`: the text is the identity of a rule not registered yet (for the error's figure).
   */
  #write(text: string, newRule: boolean): bigint {
    const bytes = encoder.encode(text);
    const { I, U } = this.#views;
    const offset = Atomics.add(I, H.arenaCursor, bytes.length);
    if (offset + bytes.length > this.#layout.arenaBytes) throw this.#full(offset, bytes.length, newRule);
    U.set(bytes, this.#layout.arenaBase + offset);
    return (BigInt(offset + 1) << 32n) | BigInt(bytes.length);
  }

  /**
   * The error for a text that does not fit: what a rule takes can only be known per rule (names
   * and specs vary in length, and each spec change takes its text again), so the figure to raise
   * `ruleBytes` to is this store's own average so far times `maxRules`.
   */
  #full(offset: number, length: number, newRule: boolean): StoreError {
    const { W } = this.#views;
    const { maxRules, ruleIdBase, arenaBytes } = this.#layout;
    let rules = 0;
    for (let r = 0; r < maxRules; r++) if (Atomics.load(W, ruleIdBase + r) !== 0n) rules++;
    // The cursor runs past the arena once a text did not fit (every later attempt adds to it).
    const used = Math.min(offset, arenaBytes);
    const perRule = (used + length) / Math.max(1, rules + (newRule ? 1 : 0));
    const raiseTo = Math.max(arenaBytes + length, Math.ceil((perRule * maxRules) / 1024) * 1024);
    return new StoreError(
      `SharedMemoryStore: no room left for rule texts: \`ruleBytes\` ${arenaBytes} is full with ${rules} of ` +
        `\`maxRules\` ${maxRules} rules registered (${Math.ceil(perRule)} bytes a rule so far; this text needs ${length}); ` +
        `create the store with \`ruleBytes: ${raiseTo}\` or more`,
    );
  }

  #read(word: bigint): string {
    const offset = Number(word >> 32n) - 1;
    const length = Number(word & 0xffffffffn);
    const at = this.#layout.arenaBase + offset;
    // A copy: TextDecoder does not read shared memory.
    return decoder.decode(this.#views.U.slice(at, at + length));
  }
}
