import { request } from "node:http";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, serve } from "../cli/helpers.ts";

beforeAll(ensureBuilt);

/** Starts a POST whose body is sent later; resolves the status and body once answered. */
function slowCheck(url: string): {
  finish: () => void;
  response: Promise<{ status: number; body: string }>;
  sent: Promise<void>;
} {
  const body = JSON.stringify({ rule: "api", key: "slow" });
  const req = request(`${url}/v1/check`, { method: "POST", headers: { "content-length": Buffer.byteLength(body) } });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
  });
  req.write(body.slice(0, 5));
  const sent = new Promise<void>((resolve) => req.on("socket", (s) => s.on("connect", () => resolve())));
  return { finish: () => req.end(body.slice(5)), response, sent };
}

describe("sluice serve: graceful shutdown", () => {
  it("answers every request it received after SIGTERM, under load, then exits 0", async () => {
    const s = await serve(["--config", "examples/rules.yaml"]);
    const slow = slowCheck(s.url);
    await slow.sent;
    let answered = 0;
    let stop = false;
    const worker = async () => {
      while (!stop) {
        try {
          const res = await fetch(`${s.url}/v1/check`, {
            method: "POST",
            body: JSON.stringify({ rule: "api", key: "load" }),
          });
          await res.json();
          expect(res.status).toBe(200);
          answered++;
        } catch {
          stop = true; // the server stopped accepting: the only way a request may go unanswered
        }
      }
    };
    const workers = Array.from({ length: 16 }, worker);
    while (answered < 200) await new Promise((r) => setTimeout(r, 5));
    s.child.kill("SIGTERM");
    await s.waitForLog(/SIGTERM: closing/);
    slow.finish(); // its headers arrived before SIGTERM: it is in flight and must be answered
    const result = await slow.response;
    expect(result.status).toBe(200);
    expect(JSON.parse(result.body)).toMatchObject({ allowed: true });
    stop = true;
    await Promise.all(workers);
    expect(await s.exited).toBe(0);
    const served = Number(/closed after serving (\d+) requests/.exec(s.log())?.[1]);
    // Every request the server took on reached its client: nothing was lost in between.
    expect(served).toBe(answered + 1);
  });
});
