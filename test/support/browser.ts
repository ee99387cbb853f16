/**
 * Headless Chromium for the page tests: Debian's chromium driven by playwright-core (never a
 * downloaded browser). Without /usr/bin/chromium the suites skip locally, but under CI (where
 * .ci/run installs it) a missing browser is a failure, not a skip.
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { ROOT } from "../cli/helpers.ts";
import { cannotRun } from "./skip.ts";

/** Where the browser is expected. */
export const CHROMIUM = "/usr/bin/chromium";
/** Screenshots and reports the page tests keep (gitignored). */
export const ARTIFACTS = join(ROOT, "test-artifacts");
/** Whether the page suites run here. */
export const chromiumAvailable = existsSync(CHROMIUM);

if (!chromiumAvailable) cannotRun("browser tests", `${CHROMIUM} is not installed (.ci/run installs it)`);

/**
 * Launches headless Chromium with the flags this machine needs (no sandbox as root, no
 * background network, sync or updates); Playwright gives it a fresh profile directory.
 */
export async function launchChromium(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
