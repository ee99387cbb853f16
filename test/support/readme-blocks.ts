/**
 * Finds the code blocks of a Markdown file that test/readme.test.ts runs: fenced blocks tagged
 * ts, typescript, js or javascript. A block preceded by `<!-- not-run: reason -->` (only blank
 * lines between) is reported as skipped with its reason, so a fragment is never skipped
 * silently. Line numbers are 1-based lines of the Markdown file, for failure messages.
 */

/** The languages whose blocks are run. */
const RUN_LANGUAGES: Record<string, "js" | "ts"> = { js: "js", javascript: "js", ts: "ts", typescript: "ts" };

/** One fenced block of a runnable language. */
export interface CodeBlock {
  /** The line of the opening fence. */
  line: number;
  /** `js` (run as is) or `ts` (types stripped first). */
  language: "js" | "ts";
  /** The block's text; its line `i` (0-based) is line `line + 1 + i` of the file. */
  code: string;
  /** Set when a `<!-- not-run: reason -->` marker precedes the block. */
  notRun?: string;
}

/** A structural mistake in the Markdown that would hide a block from the test. */
export class ReadmeFormatError extends Error {}

const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
const NOT_RUN = /^\s*<!--\s*not-run\s*:(.*?)-->\s*$/;

/** Every fenced block of a runnable language in `markdown`, in order. */
export function extractBlocks(markdown: string, file = "README.md"): CodeBlock[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: CodeBlock[] = [];
  let marker: { reason: string; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i] as string;
    const notRun = NOT_RUN.exec(text);
    if (notRun !== null) {
      const reason = (notRun[1] as string).trim();
      if (reason === "") throw new ReadmeFormatError(`${file}:${i + 1}: <!-- not-run: … --> needs a reason`);
      marker = { reason, line: i + 1 };
      continue;
    }
    const open = FENCE.exec(text);
    if (open === null) {
      if (text.trim() !== "" && marker !== undefined) {
        throw new ReadmeFormatError(`${file}:${marker.line}: <!-- not-run --> must come right before a code fence`);
      }
      continue;
    }
    const indent = (open[1] as string).length;
    const fence = open[2] as string;
    const info = (open[3] as string).trim();
    if (fence[0] === "`" && info.includes("`")) continue; // inline code such as ```x```, not a fence
    const close = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`);
    const body: string[] = [];
    let end = i + 1;
    while (end < lines.length && !close.test(lines[end] as string)) {
      // Content lines lose up to the opening fence's indentation (CommonMark).
      body.push((lines[end] as string).replace(new RegExp(`^ {0,${indent}}`), ""));
      end++;
    }
    if (end === lines.length) throw new ReadmeFormatError(`${file}:${i + 1}: code fence is never closed`);
    const language = RUN_LANGUAGES[(info.split(/\s+/)[0] ?? "").toLowerCase()];
    if (language !== undefined) {
      const block: CodeBlock = { line: i + 1, language, code: `${body.join("\n")}\n` };
      if (marker !== undefined) block.notRun = marker.reason;
      blocks.push(block);
    } else if (marker !== undefined) {
      throw new ReadmeFormatError(`${file}:${marker.line}: <!-- not-run --> precedes a block that is not run anyway`);
    }
    marker = undefined;
    i = end;
  }
  if (marker !== undefined) {
    throw new ReadmeFormatError(`${file}:${marker.line}: <!-- not-run --> must come right before a code fence`);
  }
  return blocks;
}
