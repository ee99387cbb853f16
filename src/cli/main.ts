#!/usr/bin/env node
/**
 * The `sluice` command: replay, compare, serve, check-config. Exit status 0 on success, 1 on
 * invalid input or config (the message names the file, line, rule or field), 2 on a usage error.
 * The commands themselves are dispatched by run.ts; this file is the process wiring.
 */
import { runCli } from "./run.ts";

// A closed stdout (`sluice replay big.csv | head`) is the reader's choice, not a failure.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

const io = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
runCli(process.argv.slice(2), io).then(
  (status) => {
    process.exitCode = status;
  },
  (error: unknown) => {
    // runCli reports every error itself; this is only for a failure while reporting one.
    process.stderr.write(`sluice: unexpected error: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
