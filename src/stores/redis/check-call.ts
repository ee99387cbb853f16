/**
 * How a batch reaches the check program: FCALL of its function library where the server has
 * Redis Functions (Redis and Valkey >= 7, standalone or Sentinel), else EVALSHA of the same
 * program as a script. A script's whole top level runs on every call (every helper made
 * again); a library's definitions run once per server (script.ts), which saves ~100,000 Redis
 * instructions per call: half the cost of a one-check batch.
 *
 * The library is loaded when a call first finds it missing ("Function not found": the call did
 * not run, so sending it again cannot count twice), as after a restart or FUNCTION FLUSH. Where
 * FUNCTION or FCALL is refused (an older server, an ACL, a managed service that disables it),
 * the store uses EVALSHA from then on; a Cluster always does (each node would need the library).
 * NOSCRIPT (the server lacks the script) is answered with EVAL, which also caches it.
 */
import type { RedisCommands } from "./client.ts";
import type { CheckScript } from "./script.ts";

/**
 * Where a server's error text starts, as each client reports it: ioredis's `ReplyError: ERR …`,
 * node-redis's `ERR …`, valkey-glide's `… - ResponseError: …` (without the code).
 */
const FROM_SERVER = String.raw`(?:^(?:ReplyError: )?(?:ERR )?|- \w+: )`;
/** FCALL found no such function: it did not run. */
const MISSING = new RegExp(`${FROM_SERVER}Function not found`);
/**
 * Errors saying this server or user will not run functions at all, before anything ran: an
 * unknown command (Redis < 7, a renamed command), an ACL's NOPERM, a service's own refusal.
 */
const REFUSED = new RegExp(
  `${FROM_SERVER}(?:unknown (?:sub)?command|NOPERM)|^(?:ReplyError: )?ERR\\b.*\\b(?:not allowed|disabled)\\b`,
  "i",
);
/** A library of this name is there already (another process of this version loaded it). */
const EXISTS = /already exists/i;

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Calls the check program by FCALL or EVALSHA, whichever the server takes. */
export class CheckCaller {
  readonly #commands: RedisCommands;
  readonly #script: CheckScript;
  /** Whether FCALL is still worth trying (false: EVALSHA for good). */
  #functions: boolean;
  /** The FUNCTION LOAD under way, shared by the calls that found the function missing meanwhile. */
  #loading: Promise<boolean> | undefined;

  constructor(commands: RedisCommands, script: CheckScript) {
    this.#commands = commands;
    this.#script = script;
    this.#functions = commands.command !== undefined;
  }

  /**
   * Runs the program on `keys` and `args`. `late()` says the callers were already answered by
   * the failure policy: then a call that did not run is not sent again (it would count requests
   * that were told something else).
   */
  async call(keys: string[], args: string[], late: () => boolean): Promise<unknown> {
    const command = this.#commands.command;
    if (this.#functions && command !== undefined) {
      const fcall = () => command(["FCALL", this.#script.fn, String(keys.length), ...keys, ...args]);
      try {
        return await fcall();
      } catch (error) {
        const text = message(error);
        if (MISSING.test(text)) {
          if (late()) throw error;
          if (await this.#load(command)) {
            if (late()) throw error;
            return fcall();
          }
        } else if (REFUSED.test(text)) {
          this.#functions = false;
          if (late()) throw error;
        } else {
          throw error;
        }
      }
    }
    return this.#evalsha(keys, args, late);
  }

  /** Loads the library once for every call waiting on it; false when the server refused it. */
  #load(command: (args: string[]) => Promise<unknown>): Promise<boolean> {
    this.#loading ??= command(["FUNCTION", "LOAD", this.#script.library]).then(
      () => true,
      (error: unknown) => {
        const text = message(error);
        if (EXISTS.test(text)) return true;
        // Refused: scripts from now on. Any other failure (a lost connection) leaves the next
        // call to try again; this one goes by EVALSHA.
        if (REFUSED.test(text)) this.#functions = false;
        return false;
      },
    );
    const loading = this.#loading;
    void loading.then(() => {
      if (this.#loading === loading) this.#loading = undefined;
    });
    return loading;
  }

  /** One EVALSHA, or EVAL when the server does not have the script (it did not run). */
  async #evalsha(keys: string[], args: string[], late: () => boolean): Promise<unknown> {
    const { sha, source } = this.#script;
    try {
      return await this.#commands.evalsha(sha, keys, args);
    } catch (error) {
      if (!late() && message(error).startsWith("NOSCRIPT")) return this.#commands.eval(source, keys, args);
      throw error;
    }
  }
}
