// Helpers of the attack tests (test/throttle/attack-*.test.ts): processes of
// test/throttle/attack-child.mjs driven line by line on stdin, their event lines read back.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const CHILD = fileURLToPath(new URL("./attack-child.mjs", import.meta.url));

/** One attack child process. */
export interface AttackChild {
  proc: ChildProcess;
  /** Everything it printed so far. */
  text: () => string;
  /** Sends one command line. */
  send: (line: string) => void;
  /** Resolves once its output matches `re` (rejects after `ms`). */
  until: (re: RegExp, ms?: number) => Promise<void>;
  /** Resolves when it has exited (or was killed). */
  exited: Promise<void>;
}

/** Starts a child on `url` with `prefix` and throttle options; resolves once it is ready. */
export async function attackChild(url: string, prefix: string, options: object): Promise<AttackChild> {
  const proc = spawn(process.execPath, [CHILD, url, prefix, JSON.stringify(options)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  let text = "";
  proc.stdout?.setEncoding("utf8");
  proc.stdout?.on("data", (d: string) => (text += d));
  const exited = new Promise<void>((resolve) => proc.on("close", () => resolve()));
  const until = (re: RegExp, ms = 10_000) =>
    new Promise<void>((resolve, reject) => {
      const started = Date.now();
      const poll = setInterval(() => {
        if (re.test(text)) {
          clearInterval(poll);
          resolve();
        } else if (Date.now() - started > ms) {
          clearInterval(poll);
          reject(new Error(`no ${re} within ${ms} ms; output:\n${text}`));
        }
      }, 5);
    });
  const child = { proc, text: () => text, send: (line: string) => proc.stdin?.write(`${line}\n`), until, exited };
  await until(/^ready$/m, 20_000);
  return child;
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
