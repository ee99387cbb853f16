import { Agent, request } from "node:http";
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
  const req = request(`${url}/v1/check`, {
    method: "POST",
    headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
  });
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
            headers: { "content-type": "application/json" },
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

interface Outcome {
  status: number;
  connection: string | undefined;
}

/** One POST /v1/check on `agent`; rejects with the socket error when the request fails. */
function check(url: string, agent: Agent, key: string): Promise<Outcome> {
  const body = JSON.stringify({ rule: "api", key });
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/check`, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
    });
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("sluice serve: graceful shutdown with keep-alive clients", () => {
  it("answers in-flight requests with Connection: close, closes idle sockets, loses nothing", async () => {
    const s = await serve(["--config", "examples/rules.yaml"]);
    const busy = new Agent({ keepAlive: true, maxSockets: 8 });
    const idle = new Agent({ keepAlive: true, maxSockets: 1 });
    // One client that made a request and then went quiet: its socket must be closed, not kept.
    expect((await check(s.url, idle, "idle")).status).toBe(200);
    const idleSocket = (idle.freeSockets[Object.keys(idle.freeSockets)[0] as string] ?? [])[0];
    expect(idleSocket).toBeDefined();
    const idleClosed = new Promise<void>((resolve) => idleSocket?.once("close", () => resolve()));

    let answered = 1;
    const last: Array<string | undefined> = [];
    const failures: string[] = [];
    const worker = async (id: number) => {
      // Each worker runs until its own request is refused: its connection must have been let go.
      for (let stop = false; !stop; ) {
        try {
          const r = await check(s.url, busy, `w${id}`);
          expect(r.status).toBe(200);
          answered++;
          last[id] = r.connection;
        } catch (error) {
          // Refused: the listener is closed, the request was never received. Anything else
          // (a reset, a hang-up) is a request the client sent and never got an answer to.
          const code = (error as NodeJS.ErrnoException).code ?? String(error);
          if (code !== "ECONNREFUSED") failures.push(code);
          stop = true;
        }
      }
    };
    const workers = Array.from({ length: 8 }, (_, i) => worker(i));
    while (answered < 300) await new Promise((r) => setTimeout(r, 5));
    s.child.kill("SIGTERM");
    await Promise.all(workers);
    await idleClosed;
    expect(failures).toEqual([]);
    expect(await s.exited).toBe(0);
    const served = Number(/closed after serving (\d+) requests/.exec(s.log())?.[1]);
    expect(served).toBe(answered);
    // Each busy connection ended either on an answer that told its client to let it go, or,
    // when its client was slower than the idle grace (a loaded machine), by the server closing
    // it while idle: either way the next request went to a new connection and was refused,
    // never reset (`failures` above is empty).
    for (const connection of last) expect(["close", "keep-alive"]).toContain(connection);
    busy.destroy();
    idle.destroy();
  });
});
