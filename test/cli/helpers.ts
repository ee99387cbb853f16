/**
 * Shared by the CLI and service suites: build dist/ once (under a lock, since vitest runs files
 * in parallel and `npm test` has usually built already), run the real bin, start a real server.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { runCli } from "../../src/cli/run.ts";

/** The repository root. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The built bin. */
export const BIN = join(ROOT, "dist/cli/main.js");

function newest(dir: string): number {
  let max = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const s = statSync(path);
    max = Math.max(max, s.isDirectory() ? newest(path) : s.mtimeMs);
  }
  return max;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Builds dist/ unless it is newer than every source file. */
export function ensureBuilt(): void {
  const lock = join(tmpdir(), "sluice-cli-tests-build.lock");
  for (let i = 0; ; i++) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (i > 600) rmSync(lock, { recursive: true, force: true }); // a stale lock from a killed run
      sleepSync(100);
    }
  }
  try {
    let fresh = false;
    try {
      fresh = statSync(BIN).mtimeMs >= newest(join(ROOT, "src"));
    } catch {}
    if (!fresh) {
      const r = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: ROOT, encoding: "utf8" });
      // Type errors elsewhere in the tree still leave a usable dist/; only a missing bin fails.
      try {
        statSync(BIN);
      } catch {
        throw new Error(`build failed:\n${r.stdout}\n${r.stderr}`);
      }
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** What a finished command printed and its exit status. */
export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `sluice ...args` to completion, with `input` on stdin. */
export function run(args: string[], input?: string, env: Record<string, string> = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
    child.stdin.on("error", () => undefined);
    child.stdin.end(input ?? "");
  });
}

/**
 * Runs `sluice ...args` in this process (no child to start: the cheap way for the many small
 * cases), with `input` on stdin; the same exit statuses and output as the bin.
 */
export async function runIn(args: string[], input = ""): Promise<RunResult> {
  const stdin = Readable.from([input]);
  let stdout = "";
  let stderr = "";
  const sink = (append: (text: string) => void) =>
    new Writable({
      write(chunk, _encoding, done) {
        append(String(chunk));
        done();
      },
    });
  const status = await runCli(args, {
    stdin,
    stdout: sink((t) => (stdout += t)),
    stderr: sink((t) => (stderr += t)),
  });
  return { status, stdout, stderr };
}

/** A temporary folder for one suite, removed by the returned cleanup. */
export function tempDir(): { dir: string; file: (name: string, text: string) => string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "sluice-cli-"));
  return {
    dir,
    file: (name, text) => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A running `sluice serve` child. */
export interface Served {
  url: string;
  child: ChildProcess;
  /** Everything written to stderr so far (the log). */
  log(): string;
  stdout(): string;
  /** Resolves with the exit status once the child has exited. */
  exited: Promise<number | null>;
  /** Polls the log until `pattern` appears. */
  waitForLog(pattern: RegExp): Promise<void>;
  stop(): Promise<number | null>;
}

/** Starts `sluice serve --port 0 ...args` and resolves once it prints its address. */
export function serve(args: string[], env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [BIN, "serve", "--port", "0", ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  });
  let out = "";
  let err = "";
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.stderr?.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m !== null) {
        resolve({
          url: m[1] as string,
          child,
          log: () => err,
          stdout: () => out,
          exited,
          waitForLog: async (pattern) => {
            while (!pattern.test(err)) await new Promise((r) => setTimeout(r, 20));
          },
          stop: () => {
            if (child.exitCode === null) child.kill("SIGTERM");
            return exited;
          },
        });
      }
    });
    void exited.then((code) => reject(new Error(`serve exited with ${code} before listening:\n${err}`)));
  });
}
