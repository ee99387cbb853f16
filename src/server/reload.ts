/**
 * Hot reload of the rules file, on change (fs.watch on its folder, since editors often replace
 * a file by renaming) or on SIGHUP. An invalid or oversized file never replaces the running
 * rules: the last good config stays, and the failure is logged and counted in metrics. The
 * file is read asynchronously and its size is capped, so a reload never stalls answering.
 */
import { type FSWatcher, watch } from "node:fs";
import { basename, dirname } from "node:path";
import type { RulesConfig } from "../config/rules-file.ts";
import { loadRulesFile } from "../config/rules-file.ts";
import { systemClock } from "../index.ts";
import type { Metrics } from "./metrics.ts";
import type { ApplyResult } from "./rules-state.ts";

/** Reloads one rules file into the service. */
export class Reloader {
  readonly path: string;
  /** The last reload error message, or undefined when the last load succeeded. */
  lastError: string | undefined;
  readonly #apply: (config: RulesConfig) => ApplyResult;
  readonly #prepare: ((config: RulesConfig) => Promise<() => Promise<void>>) | undefined;
  readonly #metrics: Metrics;
  readonly #log: (line: string) => void;
  readonly #maxBytes: number | undefined;
  #watcher: FSWatcher | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #chain: Promise<void> = Promise.resolve();

  constructor(
    path: string,
    apply: (config: RulesConfig) => ApplyResult,
    metrics: Metrics,
    log: (line: string) => void,
    /** Checks what else the file feeds (the Envoy API's domains); returns how to apply it. */
    prepare?: (config: RulesConfig) => Promise<() => Promise<void>>,
    maxBytes?: number,
  ) {
    this.#prepare = prepare;
    this.#maxBytes = maxBytes;
    this.path = path;
    this.#apply = apply;
    this.#metrics = metrics;
    this.#log = log;
  }

  /** Reloads now (serialised with any reload in progress); resolves whether it was applied. */
  reload(reason: string): Promise<boolean> {
    const run = this.#chain.then(() => this.#reload(reason));
    this.#chain = run.then(() => undefined);
    return run;
  }

  async #reload(reason: string): Promise<boolean> {
    this.#metrics.lastReloadAt = Math.floor(systemClock.now() / 1000);
    try {
      const config = await loadRulesFile(this.path, this.#maxBytes === undefined ? {} : { maxBytes: this.#maxBytes });
      const commit = await this.#prepare?.(config);
      const r = this.#apply(config);
      await commit?.();
      this.lastError = undefined;
      this.#metrics.reloads.success++;
      this.#metrics.lastReloadOk = 1;
      const changes = [
        ...r.added.map((n) => `+${n}`),
        ...r.updated.map((n) => `~${n}`),
        ...r.removed.map((n) => `-${n}`),
      ];
      this.#log(
        `config reloaded (${reason}): ${config.rules.length} rules${changes.length ? ` (${changes.join(" ")})` : ", no changes"}`,
      );
      return true;
    } catch (error) {
      this.lastError = (error as Error).message;
      this.#metrics.reloads.failure++;
      this.#metrics.lastReloadOk = 0;
      this.#log(`config reload failed (${reason}): ${this.lastError}; keeping the last good config`);
      return false;
    }
  }

  /** Starts watching the file; changes within 100 ms are folded into one reload. */
  watch(): void {
    const name = basename(this.path);
    this.#watcher = watch(dirname(this.path), (_event, file) => {
      if (file !== null && file !== name) return;
      clearTimeout(this.#timer);
      this.#timer = setTimeout(() => void this.reload("file changed"), 100);
    });
    this.#watcher.on("error", (error) => this.#log(`config watch stopped: ${error.message}`));
  }

  /** Stops watching. */
  close(): void {
    clearTimeout(this.#timer);
    this.#watcher?.close();
  }
}
