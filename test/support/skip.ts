/**
 * The one gate every skip in the suite goes through. Locally a suite that cannot run (no Redis,
 * no browser, no IPv6 loopback) skips with a loud notice; under CI it fails instead, because
 * .ci/run installs everything the suites need and a skip there would hide a broken setup.
 */

/**
 * Whether this run is CI: `CI` set to a truthy value. `CI=false`, `CI=0`, `CI=no`, `CI=off` and
 * an empty `CI` are not CI (some tools export `CI=false` to turn CI behaviour off).
 */
export function isCI(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env.CI;
  if (value === undefined) return false;
  return !["", "0", "false", "no", "off"].includes(value.trim().toLowerCase());
}

/**
 * Says loudly that `what` cannot run here and why; under CI it throws instead (the caller's
 * file or test then fails). Returns true, so `if (cannotRun(...)) return ctx.skip()` reads well.
 */
export function cannotRun(what: string, why: string, env: NodeJS.ProcessEnv = process.env): true {
  const message = `${what} cannot run: ${why}`;
  if (isCI(env)) throw new Error(`${message} (CI is set, so this fails instead of skipping)`);
  console.warn(`\n${"!".repeat(80)}\n!! SKIPPED: ${message}\n${"!".repeat(80)}\n`);
  return true;
}

/** `ctx.skip()` for one test that cannot run here, through `cannotRun` (so CI fails instead). */
export function skipTest(ctx: { skip: (note?: string) => void }, what: string, why: string): void {
  cannotRun(what, why);
  ctx.skip(why);
}

/** Whether a TCP server can listen on `host` here (e.g. `::1` needs an IPv6 loopback). */
export async function canListen(host: string): Promise<boolean> {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(0, host, () => server.close(() => resolve(true)));
  });
}
