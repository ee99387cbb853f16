/**
 * Result comments in documentation code blocks are checked, not decoration. A line
 *
 *     console.log(limiter.peek("k").remaining); // => 4
 *
 * is rewritten so the call prints as before and also reports what it printed (formatted as
 * `console.log` formats it, on one line) with its Markdown line to `__docResult`, defined by
 * result-prelude.mjs (loaded with `node --import`). The printed text must match the comment:
 * exactly, except that `<anything in angle brackets>`, `...` and `…` stand for any text. Every
 * such line must also run at least once. A trailing comment on a `console.log` line that is not
 * a `// =>` result comment is refused, so no block can claim an output that nobody checks.
 */
import type { CodeBlock } from "../support/readme-blocks.ts";
import { ReadmeFormatError } from "../support/readme-blocks.ts";

/** One checked result comment. */
export interface ResultCheck {
  /** The Markdown line of the `console.log` call. */
  line: number;
  /** The comment's text after `// =>`. */
  text: string;
  /** `text` as a regular expression source (anchored, placeholders as `.*?`). */
  pattern: string;
}

const RESULT = "// =>";
const CALL = "console.log(";
/** A trailing `//` comment after the call's closing parenthesis. */
const TRAILING = /\)\s*;?\s*\/\/(.*)$/;

/** The regular expression a result comment's text stands for. */
export function resultPattern(text: string): string {
  const parts = text.trim().split(/<[^<>]*>|\.\.\.|…/);
  return `^${parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[\\s\\S]*?")}$`;
}

/** The block's code with its result comments instrumented, and the checks they make. */
export function instrument(block: CodeBlock, file: string): { code: string; checks: ResultCheck[] } {
  const checks: ResultCheck[] = [];
  const lines = block.code.split("\n").map((text, i) => {
    const line = block.line + 1 + i;
    const at = text.lastIndexOf(RESULT);
    if (at < 0) {
      if (text.includes(CALL) && TRAILING.test(text)) {
        throw new ReadmeFormatError(
          `${file}:${line}: a comment after console.log(...) must be a checked result comment, \`// => <what it prints>\``,
        );
      }
      return text;
    }
    const call = text.indexOf(CALL);
    if (call < 0 || call > at) {
      throw new ReadmeFormatError(`${file}:${line}: a \`// =>\` result comment must follow a console.log(...) call`);
    }
    const expected = text.slice(at + RESULT.length).trim();
    if (expected === "") throw new ReadmeFormatError(`${file}:${line}: \`// =>\` needs the expected output`);
    checks.push({ line, text: expected, pattern: resultPattern(expected) });
    return `${text.slice(0, call)}__docResult(${line}, ${text.slice(call + CALL.length)}`;
  });
  return { code: lines.join("\n"), checks };
}
