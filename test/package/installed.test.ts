// The package as a user installs it (SPEC §14): `npm pack`, then `npm install <tarball>` into an
// empty project, with no devDependency and no optional peer. Everything below runs from that
// project, never from the repository, so a module only the repository has cannot hide here.
// The tarball is packed from a fresh checkout with no dist/, as `git clone && npm ci && npm pack`
// makes it: `prepack` must build the code (a package of 33 files and no code shipped that way).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, posix } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../cli/helpers.ts";
import { rlsClient } from "../server/envoy-client.ts";

const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  exports: Record<string, unknown>;
};
const tmp = mkdtempSync(join(tmpdir(), "sluice-installed-"));
const project = join(tmp, "project");
const installed = join(project, "node_modules", pkg.name);
/** Paths inside the tarball (relative to the package root), from `npm pack --json`. */
let packed: Set<string>;

/**
 * The environment of a user's shell: nothing `npm test` adds (npm_* variables, the repository's
 * node_modules/.bin on PATH), so a command cannot find the repository's copy of anything.
 */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(name) || name === "NODE_OPTIONS" || name === "NODE_PATH" || name.startsWith("VITEST")) continue;
    env[name] = value;
  }
  env.PATH = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => !dir.includes("node_modules"))
    .join(delimiter);
  return env;
}

interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
}

function exec(command: string, args: string[], cwd: string): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: userEnv() });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
    child.stdin.end();
  });
}

async function mustExec(command: string, args: string[], cwd: string): Promise<string> {
  const r = await exec(command, args, cwd);
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** `npx sluice ...` in the project, exactly as a user types it (the bin is installed, so npx fetches nothing). */
const sluice = (args: string[]) => exec("npx", ["sluice", ...args], project);

/** Starts `npx sluice serve ...`; resolves with its stdout once it says where it listens. */
function serve(args: string[]): Promise<{ child: ChildProcess; stdout: string; url: string }> {
  const child = spawn("npx", ["sluice", "serve", "--port", "0", "--no-watch", ...args], {
    cwd: project,
    env: userEnv(),
    // Its own process group, so stopping it stops node under npx as well.
    detached: true,
  });
  running.add(child);
  let stdout = "";
  let stderr = "";
  return new Promise((resolve, reject) => {
    child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      const m = /listening on (http:\/\/\S+)/.exec(stdout);
      // The gRPC line follows the HTTP one in the same banner; wait for it when asked for.
      if (m !== null && (!args.includes("--grpc-port") || /envoy grpc\s+\S+/.test(stdout)))
        resolve({ child, stdout, url: m[1] as string });
    });
    child.on("exit", (code) => reject(new Error(`serve exited with ${code} before listening:\n${stdout}\n${stderr}`)));
  });
}

const running = new Set<ChildProcess>();
function stop(child: ChildProcess): Promise<void> {
  running.delete(child);
  if (child.exitCode !== null || child.pid === undefined) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  process.kill(-child.pid, "SIGTERM");
  return exited;
}

/**
 * A checkout as a fresh clone has it: the repository's files (committed, or new and not ignored:
 * a developer's uncommitted work is packed too), no dist/, and the repository's node_modules
 * standing in for `npm ci`.
 */
function freshCheckout(dir: string): void {
  const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: ROOT })
    .toString()
    .split("\0")
    .filter((f) => f !== "" && existsSync(join(ROOT, f)));
  for (const f of files) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    copyFileSync(join(ROOT, f), join(dir, f));
  }
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
}

beforeAll(async () => {
  const checkout = join(tmp, "checkout");
  freshCheckout(checkout);
  expect(existsSync(join(checkout, "dist")), "the checkout starts without dist/").toBe(false);
  const out = await mustExec("npm", ["pack", "--json", "--pack-destination", tmp], checkout);
  // `prepack`'s build may print before npm's JSON: the JSON is the last array in the output.
  const [info] = JSON.parse(out.slice(out.lastIndexOf("\n[") + 1)) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  if (info === undefined) throw new Error("npm pack printed no package");
  packed = new Set(info.files.map((f) => f.path));
  mkdirSync(project);
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "sluice-user", version: "1.0.0", private: true, type: "module" }),
  );
  await mustExec(
    "npm",
    ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", join(tmp, info.filename)],
    project,
  );
}, 240_000);

afterAll(async () => {
  await Promise.all([...running].map(stop));
  rmSync(tmp, { recursive: true, force: true });
});

describe("installed from the tarball into an empty project", { timeout: 90_000 }, () => {
  it("has no devDependency and no optional peer beside it", () => {
    for (const name of ["@biomejs/biome", "vitest", "typescript", "ioredis", "redis", "express", "@nestjs/common"])
      expect(existsSync(join(project, "node_modules", name)), name).toBe(false);
    for (const name of ["LICENSE", "CHANGELOG.md", "README.md", "dist/cli/main.js"])
      expect(packed.has(name), `${name} in the tarball`).toBe(true);
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    expect(manifest.repository?.url).toMatch(/^git\+https:\/\//);
    expect(manifest.license).toBe("MIT");
  });

  it("npx sluice --help and every subcommand's --help work", async () => {
    const help = await sluice(["--help"]);
    expect(help.stderr).toBe("");
    expect(help.status).toBe(0);
    const commands = [...help.stdout.matchAll(/^ {2}([a-z-]+) {2,}/gm)].map((m) => m[1] as string);
    expect(commands).toEqual(expect.arrayContaining(["serve", "replay", "compare", "check-config"]));
    for (const command of commands) {
      const r = await sluice([command, "--help"]);
      expect({ command, status: r.status, stderr: r.stderr }).toEqual({ command, status: 0, stderr: "" });
      expect(r.stdout).toMatch(/Usage: sluice /);
    }
  });

  it("sluice check-config validates the shipped example rules file", async () => {
    const r = await sluice(["check-config", "node_modules/sluice/examples/rules.yaml"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^api: /m);
    const bad = join(tmp, "bad.yaml");
    writeFileSync(bad, "rules:\n  api: { algorithm: fixed-window, limit: -1, windowMs: 1m }\n");
    const refused = await sluice(["check-config", bad]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/bad\.yaml/);
  });

  it("sluice serve --config answers the JSON API", async () => {
    const rules = join(tmp, "rules.yaml");
    writeFileSync(rules, "rules:\n  t: { algorithm: sliding-log, limit: 2, windowMs: 1h }\n");
    const s = await serve(["--config", rules]);
    try {
      const check = () =>
        fetch(`${s.url}/v1/check`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ rule: "t", key: "alice" }),
        }).then(async (r) => [r.status, ((await r.json()) as { allowed: boolean }).allowed]);
      expect([await check(), await check(), await check()]).toEqual([
        [200, true],
        [200, true],
        [200, false],
      ]);
    } finally {
      await stop(s.child);
    }
  });

  it("sluice serve --envoy-config --grpc-port answers ShouldRateLimit over gRPC", async () => {
    const config = join(tmp, "envoy");
    mkdirSync(config);
    copyFileSync(join(ROOT, "test/server/envoy-fixtures/edge.yaml"), join(config, "edge.yaml"));
    const s = await serve(["--envoy-config", config, "--grpc-port", "0"]);
    const rls = rlsClient((/envoy grpc\s+(\S+)/.exec(s.stdout) as RegExpExecArray)[1] as string);
    try {
      const ok = await rls.ask("edge", [{ entries: [["remote_address", "50.0.0.1"]] }]);
      expect(ok.overall_code).toBe("OK");
      expect(ok.statuses[0]?.limit_remaining).toBe(9);
      const blocked = await rls.ask("edge", [{ entries: [["remote_address", "50.0.0.5"]] }]);
      expect(blocked.overall_code).toBe("OVER_LIMIT");
    } finally {
      rls.close();
      await stop(s.child);
    }
  });

  it("import() of every entry point works without any optional peer; using a missing peer names it", async () => {
    const entries = Object.keys(pkg.exports).filter((e) => e !== "./package.json");
    const script = `
      import { createRequire } from "node:module";
      const require = createRequire(import.meta.url);
      // The gRPC listener runs on node:http2 (nothing else of sluice's uses it); a gRPC library
      // in require.cache would count too.
      const grpcLoaded = () =>
        process.moduleLoadList.includes("NativeModule http2") ||
        Object.keys(require.cache).some((p) => p.includes("@grpc"));
      const results = {};
      for (const entry of ${JSON.stringify(entries)}) {
        const name = "sluice" + entry.slice(1);
        try {
          results[entry] = { ok: true, names: Object.keys(await import(name)).length };
        } catch (error) {
          results[entry] = { ok: false, code: error.code, message: error.message.split("\\n")[0] };
        }
      }
      const afterEntries = grpcLoaded();
      // Using an entry whose peer is missing says which package to install.
      const used = {};
      const { SluiceModule } = await import("sluice/nest");
      try { SluiceModule.forRoot({ spec: { algorithm: "gcra", limit: 1, periodMs: 1000 } }); used.nest = "no error"; }
      catch (error) { used.nest = error.message; }
      const { DecisionMetrics } = await import("sluice/otel");
      try { new DecisionMetrics("memory"); used.otel = "no error"; } catch (error) { used.otel = error.message; }
      // The control: loading the gRPC listener does show up in the check above.
      await import(new URL("./node_modules/sluice/dist/server/envoy/grpc-server.js", "file://" + process.cwd() + "/").href);
      console.log(JSON.stringify({ results, afterEntries, used, control: grpcLoaded() }));
    `;
    const out = JSON.parse(await mustExec(process.execPath, ["--input-type=module", "-e", script], project)) as {
      results: Record<string, { ok: boolean; names?: number; code?: string; message?: string }>;
      afterEntries: boolean;
      used: { nest: string; otel: string };
      control: boolean;
    };
    for (const entry of entries) {
      const r = out.results[entry];
      expect({ entry, ...r }).toMatchObject({ entry, ok: true });
      expect(r?.names, entry).toBeGreaterThan(0);
    }
    expect(out.used.nest).toMatch(/`sluice\/nest` needs the package `@nestjs\/(common|core)`, which is not installed/);
    expect(out.used.otel).toMatch(/`sluice\/otel` needs the package `@opentelemetry\/api`, which is not installed/);
    expect(out.afterEntries, "an entry point loaded gRPC").toBe(false);
    expect(out.control, "the check for a loaded gRPC module detects one").toBe(true);
  });
});

/** Markdown links `[text](target)` and reference definitions `[id]: target`, outside code. */
function linksOf(markdown: string): string[] {
  const prose = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "");
  const inline = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string);
  const refs = [...prose.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1] as string);
  const html = [...prose.matchAll(/<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"/g)].map((m) => m[1] as string);
  return [...inline, ...refs, ...html];
}

describe("the docs a user gets", () => {
  it("every relative link in README.md and docs/**/*.md to a file of the repository names a file inside the tarball", () => {
    const pages = [...packed].filter((p) => p === "README.md" || (p.startsWith("docs/") && p.endsWith(".md")));
    expect(pages).toContain("README.md");
    const broken: string[] = [];
    let checked = 0;
    for (const page of pages) {
      for (const link of linksOf(readFileSync(join(installed, page), "utf8"))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith("#") || link.startsWith("//")) continue;
        const path = decodeURIComponent(link.replace(/[#?].*$/, ""));
        if (path === "") continue;
        const target = posix.normalize(posix.join(posix.dirname(page), path)).replace(/\/$/, "");
        checked++;
        const isFile = packed.has(target);
        const isDir = [...packed].some((p) => p.startsWith(`${target}/`));
        // Every link must lead to a file or folder the installed copy has.
        if (target.startsWith("..") || (!isFile && !isDir)) broken.push(`${page}: ${link}`);
      }
    }
    expect(broken).toEqual([]);
    // The README links at least to the semantics; a parser that finds no link checks nothing.
    expect(checked).toBeGreaterThan(0);
  });

  it("finds the links a page writes (the parser the check above relies on)", () => {
    const page = [
      'See [the guide](docs/a.md#top) and [ref][r] and <a href="docs/b.md">b</a>.',
      "```md",
      "[not a link](docs/in-code.md)",
      "```",
      "[r]: ./examples/c.yaml",
      "An [absolute](https://example.com/x.md) one, `[code](docs/inline.md)`.",
    ].join("\n");
    expect(linksOf(page).sort()).toEqual([
      "./examples/c.yaml",
      "docs/a.md#top",
      "docs/b.md",
      "https://example.com/x.md",
    ]);
  });
});
