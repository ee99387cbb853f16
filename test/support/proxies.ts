/**
 * For the reverse-proxy recipe tests (nginx, Caddy): the README block a test runs, free
 * loopback ports, waiting for a proxy to accept, and one request on a fresh connection.
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import { ROOT } from "../cli/helpers.ts";

/** The guide that holds the reverse-proxy recipes (moved there from the README). */
const RECIPES = "docs/service-recipes.md";

/** The first fenced block of `language` after `marker` in the recipes guide: the doc is what is tested. */
export function readmeBlock(marker: string, language: string): string {
  const readme = readFileSync(join(ROOT, RECIPES), "utf8");
  const at = readme.indexOf(marker);
  const block = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(readme.slice(Math.max(at, 0)));
  if (at < 0 || block === null) throw new Error(`${RECIPES} has no ${language} block after ${JSON.stringify(marker)}`);
  return block[1] as string;
}

/** Resolves once `port` accepts connections; rejects if `child` exits first. */
export async function accepting(port: number, child: ChildProcess): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the proxy exited with ${child.exitCode}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.end();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A response as received. */
export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request through the proxy on a fresh connection (a POST sends a small JSON body). */
export function call(port: number, method: string, path: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (d: string) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end(method === "POST" ? '{"order":1}' : undefined);
  });
}

/** Stops `child` and waits for it to exit. */
export async function stop(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}
