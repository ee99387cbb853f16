// A check the client gave up on is never counted later: the service refuses calls it would
// start deciding after the client's deadline (the HTTP twin of RedisStore's deadline guard).
import { createClient } from "sluice/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve, tempDir } from "../cli/helpers.ts";

const tmp = tempDir();
let s: Served;

beforeAll(async () => {
  ensureBuilt();
  const config = tmp.file("rules.yaml", "rules:\n  login: { algorithm: fixed-window, limit: 4, windowMs: 1h }\n");
  s = await serve(["--config", config]);
});
afterAll(async () => {
  s.child.kill("SIGCONT");
  await s.stop();
  tmp.cleanup();
});

describe("sluice/client deadlines", () => {
  it("a check that timed out while the service was stalled is refused when it catches up, not counted", async () => {
    const client = createClient({ url: s.url, timeoutMs: 150, onError: "allow" });
    s.child.kill("SIGSTOP"); // the service stalls with the check in its socket buffer
    const d = await client.check("login", "victim", { cost: 3 });
    expect(d.failure?.policy).toBe("allow"); // answered by the policy at the client's timeout
    s.child.kill("SIGCONT");
    await new Promise((r) => setTimeout(r, 300)); // the service reads the stale call now
    const after = createClient({ url: s.url });
    expect(await after.peek("login", "victim")).toMatchObject({ allowed: true, remaining: 3 }); // nothing spent
    await Promise.all([client.close(), after.close()]);
  });

  it("a malformed deadline is a 400, a passed one a 504 problem, and a good one decides", async () => {
    const post = (deadline: string) =>
      fetch(`${s.url}/v1/check`, {
        method: "POST",
        headers: { "content-type": "application/json", "sluice-deadline": deadline },
        body: JSON.stringify({ rule: "login", key: "direct" }),
      });
    expect((await post("soon")).status).toBe(400);
    const late = await post(String(Date.now() - 1000));
    expect(late.status).toBe(504);
    expect(await late.json()).toMatchObject({ title: "Deadline passed" });
    expect((await post(String(Date.now() + 60_000))).status).toBe(200);
  });
});
