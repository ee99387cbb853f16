/**
 * The `sluice` command dispatcher: runs one command line against the given streams and returns
 * its exit status (0 success; 1 invalid input or config, the message naming the file, line,
 * rule or field; 2 a usage error). Kept apart from the process wiring in main.ts so the tests
 * run commands in-process.
 */
import type { Readable, Writable } from "node:stream";
import { isSluiceError } from "../index.ts";
import { InputError, UsageError } from "./args.ts";
import { checkConfigCommand } from "./check-config.ts";
import { compareCommand } from "./compare/command.ts";
import { printableMessage } from "./io.ts";
import { replayCommand } from "./replay.ts";
import { serveCommand } from "./serve.ts";

/** The streams a command reads and writes. */
export interface CliIo {
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
}

const HELP = `Usage: sluice <command> [options]

Commands:
  serve          run the rate-limit service over HTTP (sluice serve --config rules.yaml)
  replay         decide every event of a trace (CSV or JSON lines) with one rule
  compare        run one trace through all six algorithms; table and --html report
  check-config   validate a rules file and say what each rule admits

Run \`sluice <command> --help\` for a command's options.
`;

type Command = (argv: string[], io: CliIo) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  serve: serveCommand,
  replay: replayCommand,
  compare: compareCommand,
  "check-config": checkConfigCommand,
};

async function dispatch(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "-h" || name === "--help" || name === "help") {
    io.stdout.write(HELP);
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "-v") {
    io.stdout.write("sluice 0.1.0\n");
    return 0;
  }
  const command = COMMANDS[name];
  if (command === undefined || !Object.hasOwn(COMMANDS, name)) {
    throw new UsageError(`unknown command ${JSON.stringify(name)}`);
  }
  return command(rest, io);
}

/** Runs `sluice ...argv`; errors become a message on `io.stderr` and the exit status. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`sluice: ${printableMessage(error.message)}\nRun \`sluice --help\` for usage.\n`);
      return 2;
    }
    if (error instanceof InputError || isSluiceError(error)) {
      io.stderr.write(`sluice: ${printableMessage((error as Error).message)}\n`);
      return 1;
    }
    io.stderr.write(`sluice: unexpected error: ${(error as Error)?.stack ?? String(error)}\n`);
    return 1;
  }
}
