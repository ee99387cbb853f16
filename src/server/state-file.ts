/**
 * `sluice serve --state FILE`: the in-process store's counts survive a restart. The file is
 * read at start (a missing file is a first start; a corrupt or foreign one is reported and
 * ignored, never fatal and never half-loaded) and written atomically — a temporary file in the
 * same directory, then a rename — every few seconds and once more on shutdown, so a crash
 * leaves the previous complete file, never a torn one. The temporary file has an unpredictable
 * name and is created exclusively without following symlinks (O_CREAT|O_EXCL|O_NOFOLLOW), owner
 * only: a link planted in the directory can neither be guessed nor be written through.
 */

import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { lstat, open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import type { MemoryStore } from "../index.ts";
import { describeRestore } from "../stores/memory/restore-report.ts";

/** Largest state file read at start: a larger one is reported and ignored. */
export const MAX_STATE_BYTES = 512 * 1024 * 1024;

/** Reads `path` into `store`; returns a line for the log (never throws). */
export async function loadState(store: MemoryStore, path: string): Promise<string> {
  try {
    // Never through a symlink (as it is written): a link's target is not read, so no error
    // message can quote a line of some other file.
    const info = await lstat(path);
    if (info.isSymbolicLink()) {
      return `state file ${path} ignored: it is a symbolic link (sluice reads and writes the state file itself, never through a link); it will be replaced by a file`;
    }
    const size = info.size;
    if (size > MAX_STATE_BYTES) return `state file ${path} ignored: ${size} bytes is over ${MAX_STATE_BYTES}`;
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    let text: string;
    try {
      text = await handle.readFile("utf8");
    } finally {
      await handle.close();
    }
    const records = store.restore(text);
    // Adopted as their rules are bound: `restoreLines` says, once they are, what came back.
    return `state file ${path}: ${records} key records read`;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return `state file ${path} not found: starting empty`;
    return `state file ${path} ignored: ${(error as Error).message}`;
  }
}

/**
 * What the restore of `path` did, once the rules are bound: records back exactly, kept only in a
 * summary, dropped, or waiting for a rule (a window changed: its keys start fresh), and why.
 * Nothing when no state was read.
 */
export function restoreLines(store: MemoryStore, path: string): string[] {
  const report = store.restored();
  if (report.tables.length === 0) return [];
  return describeRestore(report).map((line, i) => (i === 0 ? `state file ${path}: ${line}` : line));
}

/** A temporary name beside `path` no other user can predict. */
export function temporaryName(path: string): string {
  return `${path}.tmp-${randomBytes(12).toString("hex")}`;
}

const CREATE_EXCLUSIVE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Writes `store`'s snapshot to `path` atomically (temporary file, fsync, rename, fsync of the
 * directory). `tmpName` is for tests; an existing file or link at that name fails with EEXIST.
 */
export async function saveState(store: MemoryStore, path: string, tmpName = temporaryName(path)): Promise<void> {
  const tmp = tmpName;
  const file = await open(tmp, CREATE_EXCLUSIVE, 0o600);
  try {
    await file.writeFile(store.snapshot());
    await file.sync();
  } finally {
    await file.close();
  }
  try {
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
  // The rename is durable once the directory entry is on disk too.
  const dir = await open(dirname(path), constants.O_RDONLY).catch(() => undefined);
  if (dir !== undefined)
    await dir
      .sync()
      .catch(() => undefined)
      .finally(() => dir.close());
}

/** Saves every `intervalMs` (writes never overlap); `stop()` saves a last time. */
export function startStateSaver(
  store: MemoryStore,
  path: string,
  intervalMs: number,
  log: (line: string) => void,
): { stop(): Promise<void> } {
  let writing: Promise<void> = Promise.resolve();
  const save = () => {
    writing = writing.then(() =>
      saveState(store, path).catch((error: unknown) =>
        log(`state file ${path} not written: ${(error as Error).message}`),
      ),
    );
    return writing;
  };
  const timer = setInterval(() => void save(), intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await save();
    },
  };
}
