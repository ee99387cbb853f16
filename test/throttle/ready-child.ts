// One spawner for the fleet tests' child processes (fleet.test, fleet-queue.test, start-window,
// start-rolling): each child prints "ready" once its throttle is built and waits for "go" on stdin.
import { type ChildProcess, spawn } from "node:child_process";

/** A spawned child that has printed "ready". */
export interface ReadyChild {
  proc: ChildProcess;
  /** Its stdout so far. */
  text: () => string;
  /** Its whole stdout once it exits 0 (or, with `killedOk`, is SIGKILLed); rejects on another exit. */
  output: Promise<string>;
}

/** Spawns `node script ...args` and resolves once it has printed "ready". */
export function readyChild(
  script: string,
  args: string[],
  options: { stderr?: "inherit" | "ignore"; killedOk?: boolean } = {},
): Promise<ReadyChild> {
  const proc = spawn(process.execPath, [script, ...args], { stdio: ["pipe", "pipe", options.stderr ?? "inherit"] });
  let text = "";
  proc.stdout?.setEncoding("utf8");
  const output = new Promise<string>((resolve, reject) => {
    proc.stdout?.on("data", (d: string) => (text += d));
    proc.on("error", reject);
    proc.on("close", (code, signal) =>
      code === 0 || (options.killedOk === true && signal === "SIGKILL")
        ? resolve(text)
        : reject(new Error(`child exited ${code}:\n${text}`)),
    );
  });
  return new Promise((resolve) => {
    const ready = () => {
      if (text.includes("ready\n")) resolve({ proc, text: () => text, output });
      else proc.stdout?.once("data", ready);
    };
    proc.stdout?.once("data", ready);
  });
}
