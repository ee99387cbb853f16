import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonDepth } from "./body.ts";
import { type RunningServer, startServer } from "./server.ts";

describe("jsonDepth", () => {
  it("counts array and object nesting, not brackets inside strings", () => {
    expect(jsonDepth('{"rule":"api","key":"k"}', 32)).toBe(1);
    expect(jsonDepth('[{"rule":"api","key":"k"}]', 32)).toBe(2);
    expect(jsonDepth('"[[[[{{{{"', 32)).toBe(0);
    expect(jsonDepth('{"key":"a\\"[[[[\\\\"}', 32)).toBe(1); // escaped quote, then an escaped backslash
    expect(jsonDepth("[[],[[]],[]]", 32)).toBe(3);
  });

  it("stops counting past the limit (a 5,000-deep body costs no more than 33 levels)", () => {
    expect(jsonDepth("[".repeat(5000), 32)).toBe(33);
    expect(jsonDepth(`${"[".repeat(32)}${"]".repeat(32)}`, 32)).toBe(32);
  });
});

describe("an over-limit body gets a 413 every client can read", () => {
  let s: RunningServer;
  const dir = mkdtempSync(join(tmpdir(), "sluice-body-"));
  beforeAll(async () => {
    const config = join(dir, "rules.yaml");
    writeFileSync(config, "rules:\n  api: { algorithm: fixed-window, limit: 5, windowMs: 1m }\n");
    s = await startServer({
      config,
      port: 0,
      host: "127.0.0.1",
      maxBodyBytes: 65536,
      maxBatch: 1000,
      watch: false,
      shutdownTimeoutMs: 1000,
      log: () => undefined,
    });
  });
  afterAll(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const FIVE_MB = 5 * 1024 * 1024;

  async function expect413(res: Response): Promise<void> {
    expect(res.status).toBe(413);
    const problem = (await res.json()) as { type: string; detail: string; maxBytes: number };
    expect(problem.type).toBe("urn:sluice:problem:body-too-large");
    expect(problem.maxBytes).toBe(65536);
  }

  it("Node's fetch sending 5 MB with a Content-Length receives the 413 (not EPIPE)", async () => {
    const res = await fetch(`${s.url}/v1/check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new Uint8Array(FIVE_MB).fill(0x20),
    });
    await expect413(res);
    expect(((await fetch(`${s.url}/healthz`)) as Response).status).toBe(200);
  });

  it("Node's fetch streaming 5 MB (chunked, no length, still writing when the limit is passed) receives the 413", async () => {
    // One 64 KB chunk per event-loop turn: the server sees the limit passed long before the
    // client is done, so an answer that closed the connection at once would break its upload.
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent >= FIVE_MB) return controller.close();
        await new Promise((r) => setImmediate(r));
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${s.url}/v1/check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      duplex: "half",
    } as RequestInit);
    await expect413(res);
    // Answered before the whole body was sent (fetch then stops sending it).
    expect(sent).toBeLessThanOrEqual(FIVE_MB);
  });

  it("a declared length past the limit is answered 413 before any of the body is sent", async () => {
    // Raw HTTP: declare a huge body, send none of it; the 413 comes at once.
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(s.url).port), "127.0.0.1", () => {
        socket.write(
          "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n",
        );
      });
      let text = "";
      socket.on("data", (d) => {
        text += d.toString();
        if (text.includes("body-too-large")) {
          socket.destroy();
          resolve(text);
        }
      });
      socket.on("error", reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 413 /);
  });
});
