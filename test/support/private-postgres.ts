/**
 * A PostgreSQL server of a test's own (initdb + pg_ctl from /usr/lib/postgresql/<version>/bin,
 * in a temp dir, on a claimed port), which the test may stop and start again: the machine's
 * shared server must never be restarted. The cluster runs as the `postgres` user (initdb
 * refuses root), through `su` when this process is root.
 */
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { serverPort } from "./net.ts";

/** The newest installed server's bin directory, or undefined. */
function binDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "pg_ctl")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin");
}

/** A private server: `url` to connect, `stop()` (immediate: like a crash) and `start()` on the same data. */
export interface PrivatePostgres {
  readonly port: number;
  readonly url: string;
  stop(): void;
  start(): void;
  /** Stops it and removes its files. */
  destroy(): void;
}

/** Starts a private server, or resolves undefined when no server binaries are installed here. */
export async function startPrivatePostgres(): Promise<PrivatePostgres | undefined> {
  const bin = binDir();
  if (bin === undefined) return undefined;
  const root = userInfo().uid === 0;
  const dir = mkdtempSync(join(tmpdir(), "sluice-pg-"));
  if (root) {
    const ids = execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim();
    const gid = execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim();
    chownSync(dir, Number(ids), Number(gid));
  }
  const port = await serverPort();
  const as = (cmd: string, args: string[]) => {
    const quoted = [cmd, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
    if (root) execFileSync("su", ["postgres", "-s", "/bin/sh", "-c", quoted], { stdio: "ignore" });
    else execFileSync("sh", ["-c", quoted], { stdio: "ignore" });
  };
  const data = join(dir, "data");
  as(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres"]);
  const start = () =>
    as(join(bin, "pg_ctl"), [
      "-D",
      data,
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      "-l",
      join(dir, "log"),
      "-w",
      "start",
    ]);
  const stop = () => as(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"]);
  start();
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    destroy: () => {
      try {
        stop();
      } catch {}
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
