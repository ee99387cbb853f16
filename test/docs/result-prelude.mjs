// Loaded with `node --import` before a documentation block runs (see results.ts): defines
// `__docResult(line, ...args)`, which prints like console.log and checks the text against the
// block's result comment for that line. SLUICE_DOC_RESULTS holds the checks as JSON. Processes the
// block forks inherit both; only the first process checks that every result line ran.
import { formatWithOptions } from "node:util";

const checks = new Map(JSON.parse(process.env.SLUICE_DOC_RESULTS ?? "[]").map((c) => [c.line, c]));
const where = process.env.SLUICE_DOC_FILE ?? "block";
const first = process.env.SLUICE_DOC_CHILD === undefined;
process.env.SLUICE_DOC_CHILD = "1";
const ran = new Set();

/** Reports a failed check on stderr (the test looks for the prefix) and fails the process. */
function fail(message) {
  process.stderr.write(`sluice-doc-result: ${message}\n`);
  process.exitCode = 1;
}

globalThis.__docResult = (line, ...args) => {
  console.log(...args);
  ran.add(line);
  const check = checks.get(line);
  if (check === undefined) return;
  const printed = formatWithOptions({ breakLength: Number.POSITIVE_INFINITY }, ...args);
  if (!new RegExp(check.pattern).test(printed)) {
    fail(`${where}:${line}: printed ${JSON.stringify(printed)} but its comment says ${JSON.stringify(check.text)}`);
  }
};

process.on("exit", () => {
  if (!first) return;
  for (const line of checks.keys()) {
    if (!ran.has(line)) fail(`${where}:${line}: this console.log never ran, so its \`// =>\` result was not checked`);
  }
});
