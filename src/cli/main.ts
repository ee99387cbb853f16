#!/usr/bin/env node
/**
 * The `sluice` command: replay, compare, serve, check-config. Exit status 0 on success, 1 on
 * invalid input or config (the message names the file, line, rule or field), 2 on a usage error.
 */
import { isSluiceError } from "../index.ts";
import { InputError, UsageError } from "./args.ts";
import { checkConfigCommand } from "./check-config.ts";
import { compareCommand } from "./compare/command.ts";
import { replayCommand } from "./replay.ts";
import { serveCommand } from "./serve.ts";

const HELP = `Usage: sluice <command> [options]

Commands:
  serve          run the rate-limit service over HTTP (sluice serve --config rules.yaml)
  replay         decide every event of a trace (CSV or JSON lines) with one rule
  compare        run one trace through all six algorithms; table and --html report
  check-config   validate a rules file and say what each rule admits

Run \`sluice <command> --help\` for a command's options.
`;

type Command = (argv: string[]) => Promise<number>;

const io = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
const COMMANDS: Record<string, Command> = {
  serve: (argv) => serveCommand(argv, io),
  replay: (argv) => replayCommand(argv, io),
  compare: (argv) => compareCommand(argv, io),
  "check-config": (argv) => checkConfigCommand(argv, io),
};

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "-h" || name === "--help" || name === "help") {
    process.stdout.write(HELP);
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "-v") {
    process.stdout.write("sluice 0.1.0\n");
    return 0;
  }
  const command = COMMANDS[name];
  if (command === undefined) throw new UsageError(`unknown command ${JSON.stringify(name)}`);
  return command(rest);
}

// A closed stdout (`sluice replay big.csv | head`) is the reader's choice, not a failure.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

main(process.argv.slice(2)).then(
  (status) => {
    process.exitCode = status;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`sluice: ${error.message}\nRun \`sluice --help\` for usage.\n`);
      process.exitCode = 2;
    } else if (error instanceof InputError || isSluiceError(error)) {
      process.stderr.write(`sluice: ${(error as Error).message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`sluice: unexpected error: ${(error as Error)?.stack ?? String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
