/**
 * Runs a script that must exit by itself once its work is done (issue 35): a real `node` on the
 * built package, as users run it. The bound only says "it exited" (a hung script never does,
 * and is killed there), it is not a timing. Shared by test/redis/process-exit.test.ts and
 * test/server/script-exit.test.ts.
 */
import { spawn } from "node:child_process";

/** Far above the second or so a finished script takes to exit: a hung one never does. */
export const EXIT_BOUND_MS = 20_000;

/** How a child script ended. */
export interface ChildExit {
  /** The exit code, or "hung" when it was still running at the bound (then it is killed). */
  code: number | null | "hung";
  /** The child's last stdout line, parsed as JSON (its report), if it printed one. */
  report: unknown;
  stderr: string;
}

/** Runs `node script ...args` and resolves once it exits (or is killed at the bound). */
export function runExitChild(script: string, args: string[]): Promise<ChildExit> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const report = (): unknown => {
      const line = stdout.trim().split("\n").at(-1);
      return line ? JSON.parse(line) : undefined;
    };
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve({ code: "hung", report: report(), stderr });
    }, EXIT_BOUND_MS);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, report: report(), stderr });
    });
  });
}
