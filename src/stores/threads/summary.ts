/**
 * The conservative summary behind the table, shared by every thread: per rule, `DEPTH` rows of
 * `width` cells, as in MemoryStore's sketch (a key's cells chosen by its fingerprint; a cell
 * dominates every record joined into it; a key reads back its most permissive row, so it can be
 * over-counted, never reset). A cell is a tagged word pointing at an immutable block of the
 * summary pool: a join copies the cell, joins into the copy and swaps the word by
 * compare-and-swap, retrying on a race, so concurrent joins all land (a retried join starts
 * again from the cell as it then is: none is lost or counted twice) and a thread that dies
 * mid-join leaves the cell as it was.
 *
 * The pool backs only some rules' cells at once (layout sizing), so blocks of cells that no
 * longer matter come back: when the pool is empty, a join first empties cells whose fresh-at has
 * passed (a reader already treats those as empty) and returns their blocks, a batch at a time,
 * round-robin over every cell, and after a full turn that found none, not again for a while: a
 * pool full of live cells costs a flood's checks the `unplaced` count, never a scan each. A cell
 * is judged only by an instant of its own rule's clock (rules may run on different clocks, and
 * only instants of one clock compare: core/store.ts `RuleBinding.clock`): the instant of the
 * join when its rule has the same clock in this thread, else the latest instant any thread
 * decided its rule at (a shared word per rule, raised at each join, so a rule's cells come back
 * through any thread, not only one that binds it). Judged by a clock a day ahead, a live cell
 * would be emptied, and its keys would start over within their window. (The shared word assumes
 * what every store assumes: threads deciding one rule read one clock, give or take the margin.)
 * Without this, a store past four busy rules ran out of blocks for good and denied every new
 * key from then on.
 *
 * Any number of rules: when the pool has no block for a key's empty cell in some row (more rules
 * busy at once than it backs, every cell live), the key is joined into its rule's overflow cell
 * instead (one of 16 per rule, by the key's top fingerprint bits, holding their blocks from the
 * start: layout.ts). A read joins the
 * overflow cell, while it is live, into every row (an empty or stale row reads as the overflow
 * cell alone), so a key whose row had no room is still counted: rules past the pool share one
 * cells, over-counted, never forgotten. Threads' spares come from a reserve of their own
 * (`RESERVE_BLOCKS`) before the pool, and a join fills an empty cell from the pool, never from
 * its spare: a thread keeps a spare, so every join into a cell that has a block (the overflow
 * cell always has one) succeeds. (Before: with 7 rules flooded, the pool ran out and every
 * eviction failed, `unplaced`: every check of a new key was denied; test/threads/flood-cliff.test.ts.)
 */
import type { RuleRecord } from "../../core/rule.ts";
import { FreeList, indexOf, nextWord } from "../compact/free-list.ts";
import type { Codec } from "./codec.ts";
import { raiseInstant, readInstant } from "./instant-word.ts";
import { DEPTH, H, type Layout, OVERFLOW_CELLS, SUMMARY_WORDS, type Views } from "./layout.ts";
import { SummaryFilter } from "./summary-filter.ts";

/** Blocks a reclaim takes back before it stops (the rest wait for the pool's next empty turn). */
const RECLAIM_BATCH = 256;
/**
 * How long past its fresh-at a cell is kept before its block is taken back (and a table entry
 * before it is dropped as fresh, room.ts): threads read their own clocks (a worker's
 * `performance.timeOrigin` differs by a little, and a thread stalled between reading its clock
 * and deciding decides at an instant behind), and a thread whose clock is behind must not find
 * state gone that it still reads as live.
 */
export const RECLAIM_MARGIN_MS = 1000;
/**
 * After a reclaim that found nothing to take back, how long this thread waits before scanning
 * again: under a flood with every cell live, each unplaced check would otherwise pay a scan.
 */
const RECLAIM_BACKOFF_MS = 100;
/**
 * Cells one reclaim looks at before it gives up for this join (the next one goes on from there):
 * the cost of a join that finds the pool empty stays bounded whatever the number of rules.
 */
const RECLAIM_SCAN = 16_384;
/** A rule bound to more than one clock in this thread: no other rule's instant compares with it. */
const MIXED = Symbol("mixed clocks");

/** Reads and joins summary cells; one per store instance (it keeps a private spare block). */
export class Summary {
  readonly #views: Views;
  readonly #layout: Layout;
  readonly #free: FreeList;
  /** The blocks kept for threads' spares. */
  readonly #reserve: FreeList;
  /** Which keys the cells may hold state of: others are read as never summarised, without their cells. */
  readonly #filter: SummaryFilter;
  /** Which keys were given up spent into the rule's spent cells (see `join`). */
  readonly #spentFilter: SummaryFilter;
  /** A copy of each row's cell, then the overflow cell's, then the spent cell's. */
  readonly #scratch = new Float64Array(SUMMARY_WORDS * (DEPTH + 2));
  /** A block this thread took from the pool and has not published (reused on the next join). */
  #spare = -1;
  /** The cell (relative to the first) this thread's next reclaim starts at. */
  #cursor = 0;
  /** Per rule, the clock it is bound to in this thread (undefined: not bound here; MIXED: more than one). */
  readonly #clocks: unknown[];
  /** Per rule, the latest instant this thread decided it at (on that rule's clock; -Infinity: never). */
  readonly #seen: Float64Array;
  /** Per rule, before this instant (its clock) this thread does not scan again for it (its last turn found nothing). */
  readonly #quietUntil: Float64Array;
  /** Per rule, the instant a reclaim judges its cells by (scratch of `#reclaim`). */
  readonly #instants: Float64Array;
  /** Cells the reclaims looked at since one last took a block back (a full turn: all quiet). */
  #dry = 0;

  constructor(views: Views, layout: Layout, free: FreeList) {
    this.#views = views;
    this.#layout = layout;
    this.#free = free;
    this.#reserve = new FreeList(views.W, views.I, layout.summaryReserveHead, layout.summaryNextBase);
    this.#filter = new SummaryFilter(views, layout);
    this.#spentFilter = new SummaryFilter(views, layout, true);
    this.#clocks = new Array<unknown>(layout.maxRules).fill(undefined);
    this.#seen = new Float64Array(layout.maxRules).fill(Number.NEGATIVE_INFINITY);
    this.#quietUntil = new Float64Array(layout.maxRules).fill(Number.NEGATIVE_INFINITY);
    this.#instants = new Float64Array(layout.maxRules);
  }

  /** Notes that rule `rule` reads its instants from `clock` in this thread. */
  bound(rule: number, clock: object): void {
    const known = this.#clocks[rule];
    this.#clocks[rule] = known === undefined || known === clock ? clock : MIXED;
  }

  /** The W index of rule `rule`'s cell in `row` for a key with fingerprint (h1, h2). */
  #cell(rule: number, row: number, h1: number, h2: number): number {
    const { cellBase, summaryWidth } = this.#layout;
    // Double hashing: the stride is the stored high bits of h2 (its low 16 bits are clear).
    const column = (h1 + Math.imul(row, (h2 >>> 16) | 1)) & (summaryWidth - 1);
    return cellBase + (rule * DEPTH + row) * summaryWidth + column;
  }

  /** The W index of the overflow cell of rule `rule` for a key whose h2 is `h2` (its top 4 bits: not the rows' columns). */
  #overflow(rule: number, h2: number): number {
    return this.#layout.overflowBase + rule * OVERFLOW_CELLS + (h2 >>> 28);
  }

  /** The W index of the spent cell of rule `rule` for a key whose h2 is `h2` (as `#overflow`). */
  #spentCell(rule: number, h2: number): number {
    return this.#layout.spentBase + rule * OVERFLOW_CELLS + (h2 >>> 28);
  }

  /** Copies the cell whose word is `W[at]` into the scratch at `to`; false when it is empty. */
  #copy(at: number, to: number): boolean {
    const { W, F } = this.#views;
    const scratch = this.#scratch;
    for (;;) {
      const word = Atomics.load(W, at);
      const block = indexOf(word);
      if (block < 0) return false;
      const src = this.#layout.summaryBase + block * SUMMARY_WORDS;
      for (let k = 0; k < SUMMARY_WORDS; k++) scratch[to + k] = F[src + k] as number;
      // The copy counts only if the cell still points at that block (it was not recycled meanwhile).
      if (Atomics.load(W, at) === word) return true;
    }
  }

  /**
   * The records the rows hold for the key at `now` (one per row, each joined with the rule's
   * overflow cell while that is live, and with its spent cell while that is live and the spent
   * filter holds the key), or undefined when neither filter holds the key, or some row's cell is
   * empty or past its fresh-at and so are the overflow and spent cells: then the key was never
   * summarised, or what was no longer matters, and a fresh record is exact.
   */
  read(rule: number, h1: number, h2: number, now: number, codec: Codec): RuleRecord[] | undefined {
    const held = this.#filter.mayHold(rule, h1, h2);
    const scratch = this.#scratch;
    const over = DEPTH * SUMMARY_WORDS;
    const spentAt = over + SUMMARY_WORDS;
    const spent =
      this.#spentFilter.mayHold(rule, h1, h2) &&
      this.#copy(this.#spentCell(rule, h2), spentAt) &&
      (scratch[spentAt] as number) > now;
    if (!held && !spent) return undefined;
    // The cell every row is joined with (-1: none): the overflow cell, the spent cell, or both joined.
    let extra = held && this.#copy(this.#overflow(rule, h2), over) && (scratch[over] as number) > now ? over : -1;
    if (spent) {
      if (extra < 0) extra = spentAt;
      else codec.join(scratch, over, codec.read(scratch, spentAt), scratch[spentAt] as number);
    }
    let rows = 0; // bit per row whose own cell is live (none when only the spent filter holds the key)
    for (let row = 0; held && row < DEPTH; row++) {
      const live =
        this.#copy(this.#cell(rule, row, h1, h2), row * SUMMARY_WORDS) &&
        (scratch[row * SUMMARY_WORDS] as number) > now;
      if (live) rows |= 1 << row;
      else if (extra < 0) return undefined;
    }
    const records: RuleRecord[] = [];
    const joined = extra >= 0 ? codec.read(scratch, extra) : undefined;
    for (let row = 0; row < DEPTH; row++) {
      if ((rows & (1 << row)) === 0) records.push(joined as RuleRecord);
      else {
        if (joined !== undefined) codec.join(scratch, row * SUMMARY_WORDS, joined, scratch[extra] as number);
        records.push(codec.read(scratch, row * SUMMARY_WORDS));
      }
    }
    return records;
  }

  /**
   * Joins `record` (fresh at `freshAt`) into the key's cell of every row, at `now` on rule
   * `clockRule`'s clock (the rule being decided: `rule`'s own or another's); false when the pool
   * ran out (after taking back what stale cells held). A record given up `spent` (it would
   * refuse one more unit) is joined into the rule's spent cell alone, and its key noted in the
   * spent filter: read back, it is refused all the same, and the rows and overflow cells that
   * honest keys pushed out read back from are left to records with room (with 200 rules flooded,
   * nearly every record went to the overflow cells, which flood keys had filled: 55% of honest
   * requests refused). A key is read from every place a filter says it may be (`read`), so which
   * place a record goes to never lets a key past its limit.
   */
  join(
    rule: number,
    h1: number,
    h2: number,
    record: RuleRecord,
    freshAt: number,
    codec: Codec,
    now: number,
    clockRule: number,
    spent = false,
  ): boolean {
    const { W, F } = this.#views;
    const base = this.#layout.summaryBase;
    if (now > (this.#seen[clockRule] as number)) {
      this.#seen[clockRule] = now;
      raiseInstant(W, this.#layout.ruleSeenBase + clockRule, Math.floor(now));
    }
    if (spent) {
      // The filter first, as below: a thread that misses the key in the table finds it noted.
      if (this.#spentFilter.add(rule, h1, h2, freshAt)) {
        this.#spentFilter.rotate((r, at) => at + RECLAIM_MARGIN_MS <= this.instantOf(r, now, clockRule));
      }
      return this.#joinInto(this.#spentCell(rule, h2), record, freshAt, codec, now, clockRule);
    }
    let overflow = false;
    for (let row = 0; row < DEPTH && !overflow; row++) {
      const at = this.#cell(rule, row, h1, h2);
      for (;;) {
        const word = Atomics.load(W, at);
        if (indexOf(word) >= 0) {
          if (!this.#joinInto(at, record, freshAt, codec, now, clockRule)) return false;
          break;
        }
        // An empty cell takes a block of the pool (the thread's spare stays its own).
        let fresh = this.#free.pop();
        if (fresh < 0 && this.#reclaim(now, clockRule) > 0) fresh = this.#free.pop();
        if (fresh < 0) {
          overflow = true;
          break;
        }
        const dst = base + fresh * SUMMARY_WORDS;
        F.fill(Number.NaN, dst, dst + SUMMARY_WORDS);
        codec.join(F, dst, record, freshAt);
        if (Atomics.compareExchange(W, at, word, nextWord(word, fresh)) === word) break;
        this.#free.push(fresh);
      }
    }
    // A row had no room: the rule's overflow cell counts the key for every row (see `read`).
    if (overflow) {
      if (!this.#joinInto(this.#overflow(rule, h2), record, freshAt, codec, now, clockRule)) return false;
      Atomics.add(this.#views.I, H.overflowed, 1);
    }
    if (this.#filter.add(rule, h1, h2, freshAt)) {
      this.#filter.rotate((r, at) => at + RECLAIM_MARGIN_MS <= this.instantOf(r, now, clockRule));
    }
    return true;
  }

  /**
   * Joins `record` into the cell whose word is `W[at]` by copy-on-write through this thread's
   * spare (the block replaced becomes the spare); false only when the thread has no spare and
   * neither the reserve nor the pool has a block. A cell a reclaim emptied meanwhile takes the
   * spare itself.
   */
  #joinInto(at: number, record: RuleRecord, freshAt: number, codec: Codec, now: number, clockRule: number): boolean {
    const { W, F } = this.#views;
    const base = this.#layout.summaryBase;
    for (;;) {
      if (this.#spare < 0) this.#spare = this.#reserve.pop();
      if (this.#spare < 0) this.#spare = this.#free.pop();
      if (this.#spare < 0 && this.#reclaim(now, clockRule) > 0) this.#spare = this.#free.pop();
      if (this.#spare < 0) return false;
      const word = Atomics.load(W, at);
      const block = indexOf(word);
      const dst = base + this.#spare * SUMMARY_WORDS;
      if (block < 0) F.fill(Number.NaN, dst, dst + SUMMARY_WORDS);
      else F.copyWithin(dst, base + block * SUMMARY_WORDS, base + (block + 1) * SUMMARY_WORDS);
      if (Atomics.load(W, at) !== word) continue;
      codec.join(F, dst, record, freshAt);
      if (Atomics.compareExchange(W, at, word, nextWord(word, this.#spare)) === word) {
        // The replaced block is unreachable from the cell now: it becomes this thread's spare.
        this.#spare = block;
        return true;
      }
    }
  }

  /**
   * The latest instant of rule `rule`'s clock known here, at `now` on rule `clockRule`'s clock:
   * `now` when both rules read the same clock in this thread, else the latest instant any thread
   * decided `rule` at when it joined (-Infinity: never). Instants of different clocks never compare.
   */
  instantOf(rule: number, now: number, clockRule: number): number {
    const clock = this.#clocks[clockRule];
    if (clock !== undefined && clock !== MIXED && this.#clocks[rule] === clock) return now;
    return Math.max(this.#seen[rule] as number, readInstant(this.#views.W, this.#layout.ruleSeenBase + rule));
  }

  /**
   * Empties cells (of every rule, round-robin from this thread's cursor, until RECLAIM_BATCH,
   * RECLAIM_SCAN cells looked at, or a full turn) whose fresh-at is RECLAIM_MARGIN_MS or more
   * before an instant of their rule's clock (`instantOf`), and returns their blocks to the pool;
   * returns how many. Once the reclaims have looked at every cell without taking one back, none
   * scans again for RECLAIM_BACKOFF_MS on any rule's clock (each rule's by its own instant):
   * under 200 flooded rules, a backoff per rule let each rule pay a full turn (819,200 cells) of
   * its own, 76% of the flood's time. Safe beside every other step: a cell is emptied by
   * compare-and-swap of the word that was read (its tag moves, so a join that copied the block
   * fails its swap and a read that copied it reads again), and the block pushed is then
   * unreachable from every cell. Skipping a reclaim only sends joins to the overflow cells.
   */
  #reclaim(now: number, clockRule: number): number {
    if (now < (this.#quietUntil[clockRule] as number)) return 0;
    const { W, F } = this.#views;
    const { cellBase, summaryBase, maxRules, summaryWidth } = this.#layout;
    const perRule = DEPTH * summaryWidth;
    const cells = maxRules * perRule;
    let freed = 0;
    // Judged by its own rule's clock: a rule a day ahead must not find another rule's live cells stale.
    const instants = this.#instants;
    for (let r = 0; r < maxRules; r++) instants[r] = this.instantOf(r, now, clockRule);
    for (let i = Math.min(cells, RECLAIM_SCAN); i > 0 && freed < RECLAIM_BATCH; i--) {
      const at = cellBase + this.#cursor;
      const seen = instants[Math.floor(this.#cursor / perRule)] as number;
      this.#cursor = this.#cursor + 1 === cells ? 0 : this.#cursor + 1;
      this.#dry++;
      const word = Atomics.load(W, at);
      const block = indexOf(word);
      if (block < 0) continue;
      const freshAt = F[summaryBase + block * SUMMARY_WORDS] as number;
      // Read from the block the word still names (published blocks are never written), or skipped.
      if (Atomics.load(W, at) !== word || !(freshAt + RECLAIM_MARGIN_MS <= seen)) continue;
      if (Atomics.compareExchange(W, at, word, nextWord(word, -1)) !== word) continue;
      this.#free.push(block);
      freed++;
      this.#dry = 0;
    }
    if (this.#dry >= cells) {
      this.#dry = 0;
      for (let r = 0; r < maxRules; r++) this.#quietUntil[r] = (instants[r] as number) + RECLAIM_BACKOFF_MS;
    }
    return freed;
  }

  /** Gives the private spare back to the pool (when this thread is done with the store). */
  close(): void {
    if (this.#spare >= 0) this.#reserve.push(this.#spare);
    this.#spare = -1;
  }
}
