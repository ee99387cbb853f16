/**
 * A rule's record as a fixed run of float64 words, and its summary cell. Records are decoded
 * into the plain objects the algorithms step on (so `decideRule`, the one decision path, runs
 * unchanged on a private copy) and encoded back. A key's record has at most the store's
 * `recordWords` words, so a shape that needs more is refused when its rule is bound
 * (each record is as wide as its rule needs, `widthFor`, within that):
 *
 *   fixed-window 2, sliding-window 3, token-bucket 2, gcra / leaky-bucket 3,
 *   sliding-log 1 + limit (its timestamps), a ban 3.
 *
 * Sliding logs share the words left by the other members; their capacity depends only on the
 * shape, so a limit lowered and raised again (updateRule) keeps every timestamp it counted.
 */
import type { Algorithm } from "../../algorithms/algorithm.ts";
import { isLog, type SlidingLogState } from "../../algorithms/sliding-log.ts";
import type { BanPolicy, BanState } from "../../core/ban.ts";
import { ConfigError } from "../../core/errors.ts";
import { banState, type CompiledRule, memberState, type RuleRecord } from "../../core/rule.ts";
import { MAX_WIDTH_CODE } from "../compact/shared-bucket.ts";
import { joinBan, readBan } from "../compact/summary-codec.ts";
import { SUMMARY_WORDS } from "./layout.ts";

/** Reads and writes one rule's records and summary cells. */
export interface Codec {
  /** Decodes the record at `F[at]`. */
  decode(F: Float64Array, at: number): RuleRecord;
  /**
   * Decodes the record at `F[at]` like `decode`, into an object this codec reuses for a
   * one-member flat rule (no allocation on a decision's hot path): valid until the next `load`.
   */
  load(F: Float64Array, at: number): RuleRecord;
  /** Encodes `record` at `F[at]`. */
  encode(record: RuleRecord, F: Float64Array, at: number): void;
  /** Joins `record` (fresh again at `freshAt`) into the summary cell in `cells` at `at` (NaN: empty). */
  join(cells: Float64Array, at: number, record: RuleRecord, freshAt: number): void;
  /** The record a live summary cell stands for. */
  read(cells: Float64Array, at: number): RuleRecord;
  /**
   * Where a record of a rule without a ban keeps when a `block` ends (core/block.ts): a word the
   * fixed-size record has spare anyway (records never grow for it); -1 when the rule has a ban
   * (its ban slot keeps blocks) or no word to spare.
   */
  readonly blockAt: number;
}

/**
 * The fields of a fixed-size member state, in the order they are stored: every algorithm but
 * the sliding log keeps a flat record of numbers, read from a fresh state so that a change of
 * an algorithm's state needs no change here.
 */
function fieldsOf(m: Algorithm): string[] {
  return Object.keys(m.create() as object);
}

/** Reads and writes one flat state: fields in the order of the algorithm's `create()`. */
interface Flat {
  decode(F: Float64Array, o: number): unknown;
  /** Overwrites `state` (made by `decode`) with the state at `F[o]`; returns it. */
  into(state: unknown, F: Float64Array, o: number): unknown;
  encode(state: unknown, F: Float64Array, o: number): void;
}

/**
 * The flat states of today's algorithms, by their field names (as `fieldsOf` lists them), as
 * object literals: one hidden class per state, as the algorithms make them, where a loop over
 * names made every decode and encode a slow keyed access (most of a decision's time). A state
 * whose fields are not listed here takes that loop.
 */
const FLAT: Record<string, Flat | undefined> = {
  "w,c": {
    decode: (F, o) => ({ w: F[o] as number, c: F[o + 1] as number }),
    into: (s, F, o) => {
      const x = s as { w: number; c: number };
      x.w = F[o] as number;
      x.c = F[o + 1] as number;
      return x;
    },
    encode: (s, F, o) => {
      const x = s as { w: number; c: number };
      F[o] = x.w;
      F[o + 1] = x.c;
    },
  },
  "w,p,c": {
    decode: (F, o) => ({ w: F[o] as number, p: F[o + 1] as number, c: F[o + 2] as number }),
    into: (s, F, o) => {
      const x = s as { w: number; p: number; c: number };
      x.w = F[o] as number;
      x.p = F[o + 1] as number;
      x.c = F[o + 2] as number;
      return x;
    },
    encode: (s, F, o) => {
      const x = s as { w: number; p: number; c: number };
      F[o] = x.w;
      F[o + 1] = x.p;
      F[o + 2] = x.c;
    },
  },
  "b,t": {
    decode: (F, o) => ({ b: F[o] as number, t: F[o + 1] as number }),
    into: (s, F, o) => {
      const x = s as { b: number; t: number };
      x.b = F[o] as number;
      x.t = F[o + 1] as number;
      return x;
    },
    encode: (s, F, o) => {
      const x = s as { b: number; t: number };
      F[o] = x.b;
      F[o + 1] = x.t;
    },
  },
  "ms,ticks,den": {
    decode: (F, o) => ({ ms: F[o] as number, ticks: F[o + 1] as number, den: F[o + 2] as number }),
    into: (s, F, o) => {
      const x = s as { ms: number; ticks: number; den: number };
      x.ms = F[o] as number;
      x.ticks = F[o + 1] as number;
      x.den = F[o + 2] as number;
      return x;
    },
    encode: (s, F, o) => {
      const x = s as { ms: number; ticks: number; den: number };
      F[o] = x.ms;
      F[o + 1] = x.ticks;
      F[o + 2] = x.den;
    },
  },
};

/** The words a rule's record needs at least (for errors and docs). */
export function recordWordsOf(rule: CompiledRule): number {
  // Sliding logs split the words they share evenly, so each needs room for the largest.
  let words = rule.ban === undefined ? 0 : 3;
  let logs = 0;
  let largest = 0;
  for (const m of rule.members) {
    if (isLog(m)) {
      logs++;
      largest = Math.max(largest, m.limit);
    } else words += fieldsOf(m).length;
  }
  return words + logs * (1 + largest);
}

/**
 * The words a new record of `rule` takes in a store of `recordWords` (R): what it needs and, for a
 * rule without a ban, one more for a block's end, at most R; past 127 words, R (an entry's tag
 * holds widths up to 127: compact/shared-bucket.ts `MAX_WIDTH_CODE`). Records were all R words wide: a sliding log
 * of limit 10 (11 words) took 24 in a store made for 24, and 120,000 of them did not fit the
 * 24 MiB that holds them at 12 (docs/threads.md, "Wide records").
 */
export function widthFor(rule: CompiledRule, recordWords: number): number {
  const width = Math.min(recordWords, recordWordsOf(rule) + (rule.ban === undefined ? 1 : 0));
  return width > MAX_WIDTH_CODE ? recordWords : width;
}

/**
 * The codec for `rule` in records of `recordWords` words; ConfigError when the rule does not fit.
 * `narrower`: a record written `recordWords` wide by an earlier version of the rule that needed
 * fewer words (a sliding log's limit raised since), read to be written again wider: no check,
 * and its last word holds a block's end when the rule has no ban (`widthFor` gave it that word).
 */
export function codecFor(rule: CompiledRule, recordWords: number, narrower = false): Codec {
  const { members } = rule;
  const needed = recordWordsOf(rule);
  if (needed > recordWords && !narrower) {
    throw new ConfigError(
      "recordWords",
      `SharedMemoryStore: rule ${rule.shape} needs ${needed} words per key and the store holds ${recordWords} ` +
        "(each key's record has a fixed size: a sliding log takes 1 + limit words, a ban 3); " +
        `create the store with \`recordWords: ${needed}\` or more`,
      needed,
    );
  }
  let summaryWords = 1 + (rule.ban === undefined ? 0 : 3);
  for (const m of members) summaryWords += m.summary.slots;
  if (summaryWords > SUMMARY_WORDS) {
    throw new ConfigError(
      "rule",
      `SharedMemoryStore: rule ${rule.shape} has too many members to summarise (${summaryWords} of ${SUMMARY_WORDS} summary words)`,
      rule.shape,
    );
  }
  // A rule without a ban keeps a block in a spare word, when its record has one to spare.
  const blockable = rule.ban === undefined && (narrower || needed < recordWords);
  // The layout depends on the shape alone, never on limits (updateRule changes those, and with
  // them `blockable`): fixed-size members first, then the ban, then the sliding logs sharing
  // what is left. When the block word was taken from the logs, lowering a log's limit (which
  // makes the word spare) shrank the log and moved the members after it: a full log no longer
  // fit and was read as empty, admitting a whole new limit. The block word is the last word,
  // which only a log holding more than its limit would reach (encodeMember keeps it clear).
  const fixed = rule.ban === undefined ? 0 : 3;
  let fixedWords = fixed;
  let logs = 0;
  const fields = members.map((m) => (isLog(m) ? [] : fieldsOf(m)));
  members.forEach((m, i) => {
    if (isLog(m)) logs++;
    else fixedWords += (fields[i] as string[]).length;
  });
  const logWords = logs === 0 ? 0 : Math.floor((recordWords - fixedWords) / logs);
  const offsets: number[] = new Array(members.length).fill(0);
  const sizes: number[] = new Array(members.length).fill(0);
  let at = 0;
  for (const [i, m] of members.entries()) {
    if (isLog(m)) continue;
    offsets[i] = at;
    sizes[i] = (fields[i] as string[]).length;
    at += sizes[i] as number;
  }
  const banAt = at;
  at += fixed;
  for (const [i, m] of members.entries()) {
    if (!isLog(m)) continue;
    offsets[i] = at;
    sizes[i] = logWords;
    at += logWords;
  }
  const blockAt = blockable ? recordWords - 1 : -1;
  // Timestamps a log may write: all its words but the count, and never the block word (a log
  // reaches it only holding more than its limit, after updateRule lowered it: its newest
  // `limit`, the only ones that count, are kept).
  const room = members.map((_, i) =>
    blockable && (offsets[i] as number) + (sizes[i] as number) > blockAt
      ? blockAt - (offsets[i] as number) - 1
      : (sizes[i] as number) - 1,
  );
  const flat = fields.map((names) => FLAT[names.join()]);
  const decodeMember = (i: number, F: Float64Array, base: number): unknown => {
    const o = base + (offsets[i] as number);
    if (!isLog(members[i] as Algorithm)) {
      const known = flat[i];
      if (known !== undefined) return known.decode(F, o);
      const state: Record<string, number> = {};
      const names = fields[i] as string[];
      for (let k = 0; k < names.length; k++) state[names[k] as string] = F[o + k] as number;
      return state;
    }
    // A torn copy is thrown away before it is used, but must not make a huge array first.
    const raw = F[o] as number;
    const n = raw >= 0 && raw < (sizes[i] as number) ? Math.floor(raw) : 0;
    const buf = new Array<number>(n);
    for (let k = 0; k < n; k++) buf[k] = F[o + 1 + k] as number;
    return { buf, head: 0, n } satisfies SlidingLogState;
  };
  const encodeMember = (i: number, state: unknown, F: Float64Array, base: number): void => {
    const o = base + (offsets[i] as number);
    if (!isLog(members[i] as Algorithm)) {
      const known = flat[i];
      if (known !== undefined) {
        known.encode(state, F, o);
        return;
      }
      const names = fields[i] as string[];
      for (let k = 0; k < names.length; k++) F[o + k] = (state as Record<string, number>)[names[k] as string] as number;
      return;
    }
    const s = state as SlidingLogState;
    // Never more than fits (the bind check fits the limit): the newest are kept.
    const n = Math.min(s.n, room[i] as number);
    const len = s.buf.length;
    for (let k = 0; k < n; k++) F[o + 1 + k] = s.buf[(s.head + s.n - n + k) % len] as number;
    F[o] = n;
  };
  const joinCell = (cells: Float64Array, at: number, record: RuleRecord, freshAt: number): void => {
    // The layout of MemoryStore's sketch: fresh-at, each member's summary slots, the ban's.
    if (!((cells[at] as number) >= freshAt)) cells[at] = freshAt;
    let o = at + 1;
    members.forEach((m: Algorithm, i) => {
      m.summary.join(cells, o, memberState(rule, record, i));
      o += m.summary.slots;
    });
    const ban = banState(rule, record);
    // Strike counts of overlapping spans add up, as in MemoryStore's cells: a later span must
    // not replace the strikes of a key joined before it whose span still runs.
    if (ban !== undefined) joinBan(cells, o, ban, rule.ban as BanPolicy);
  };
  const readCell = (cells: Float64Array, at: number): RuleRecord => {
    let o = at + 1;
    const states = members.map((m: Algorithm) => {
      const state = m.summary.read(cells, o) ?? m.create();
      o += m.summary.slots;
      return state;
    });
    if (rule.bare) return states[0];
    if (rule.ban !== undefined) states.push(readBan(cells, o));
    return states;
  };
  // A one-member flat rule (the common case) reads and writes its words directly, into one
  // reused state: no closure per member, no allocation per decision.
  const only = rule.bare && rule.ban === undefined ? flat[0] : undefined;
  if (only !== undefined) {
    const scratch = only.decode(new Float64Array((sizes[0] as number) + 1), 0);
    return {
      blockAt,
      decode: (F, base) => only.decode(F, base) as RuleRecord,
      load: (F, base) => only.into(scratch, F, base) as RuleRecord,
      encode: (record, F, base) => only.encode(record, F, base),
      join: joinCell,
      read: readCell,
    };
  }
  return {
    blockAt,
    load(F, base) {
      return this.decode(F, base);
    },
    decode(F, base) {
      if (rule.bare) return decodeMember(0, F, base);
      const record: unknown[] = members.map((_, i) => decodeMember(i, F, base));
      if (rule.ban !== undefined) {
        const o = base + banAt;
        const n = F[o] as number;
        const since = F[o + 1] as number;
        const until = F[o + 2] as number;
        // Read-back mode (core/ban.ts) rides in the sign of the count word: -1 - n.
        record.push(n < 0 ? { n: -1 - n, since, until, readBack: true } : ({ n, since, until } satisfies BanState));
      }
      return record;
    },
    encode(record, F, base) {
      for (let i = 0; i < members.length; i++) encodeMember(i, memberState(rule, record, i), F, base);
      const ban = banState(rule, record);
      if (ban !== undefined) {
        const o = base + banAt;
        F[o] = ban.readBack === true ? -1 - ban.n : ban.n;
        F[o + 1] = ban.since;
        F[o + 2] = ban.until;
      }
    },
    join: joinCell,
    read: readCell,
  };
}
