/**
 * The caller's deadline: `sluice/client` sends `Sluice-Deadline` (epoch ms) with every call,
 * and the service refuses a call it starts deciding after that instant (504, nothing counted).
 * A call that timed out at the client has already been answered there by its failure policy;
 * counting it later, when a stalled service catches up, would charge a request that was told
 * something else. This is the HTTP twin of RedisStore's deadline guard. It is exact when the two
 * clocks agree; a service clock behind the caller's by s ms can still decide a call up to s ms late.
 */
import type { IncomingMessage } from "node:http";
import { systemClock } from "../index.ts";
import { HttpError } from "./problem.ts";

/** The header the client sends. */
export const DEADLINE_HEADER = "sluice-deadline";

/** Throws 400 for a malformed deadline, 504 when it has passed; returns when the call may go on. */
export function checkDeadline(req: IncomingMessage): void {
  const text = req.headers[DEADLINE_HEADER];
  if (text === undefined) return;
  const deadline = Number(text);
  if (typeof text !== "string" || !/^\d{1,16}$/.test(text) || !Number.isSafeInteger(deadline)) {
    throw new HttpError(400, "invalid-deadline", "Bad request", `${DEADLINE_HEADER} must be epoch milliseconds`);
  }
  if (systemClock.now() >= deadline) {
    throw new HttpError(
      504,
      "deadline-passed",
      "Deadline passed",
      "the caller's deadline passed before this call was decided; nothing was counted",
    );
  }
}
