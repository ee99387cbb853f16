/**
 * One POST to the service over kept-alive sockets, bounded by a timeout. Every way the
 * service can fail to answer (refused, reset, timeout, a reply that is not HTTP) becomes a
 * StoreError, with the original error as `cause`; an HTTP answer of any status is returned.
 */
import { type ClientRequest, Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { systemClock } from "../core/clock.ts";
import { StoreError } from "../core/errors.ts";
import { timeoutError, withTimeout } from "../stores/remote/with-timeout.ts";

/** An HTTP answer: its status and the parsed JSON body (undefined when it was not JSON). */
export interface Reply {
  status: number;
  body: unknown;
}

/** Keeps sockets open between calls and sends POSTs with a timeout. */
export class Transport {
  readonly #base: URL;
  readonly #agent: HttpAgent;
  readonly #request: typeof httpRequest;
  readonly #headers: Record<string, string>;

  constructor(base: URL, token: string | undefined, maxSockets: number) {
    this.#base = base;
    const https = base.protocol === "https:";
    // Idle sockets are dropped after 4 s, before the service's 5 s keep-alive timeout closes
    // them under us (a request written to a socket the server is closing would be reset).
    const agentOptions = { keepAlive: true, maxSockets, timeout: 4000, scheduling: "lifo" as const };
    this.#agent = https ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
    this.#request = https ? (httpsRequest as typeof httpRequest) : httpRequest;
    this.#headers = { "content-type": "application/json", accept: "application/json" };
    if (token !== undefined) this.#headers.authorization = `Bearer ${token}`;
  }

  /**
   * POSTs `payload` as JSON to `path` (relative to the base URL); rejects only with StoreError.
   * `timeoutMs` bounds the whole call, a retry included.
   */
  async post(path: string, payload: unknown, timeoutMs: number): Promise<Reply> {
    const body = JSON.stringify(payload);
    const deadline = performance.now() + timeoutMs;
    try {
      return await this.#send(path, body, timeoutMs);
    } catch (error) {
      // Sent again only when it provably never left: its socket never connected. A reset on a
      // connected socket (even a kept-alive one thought idle) may come after a server or a proxy
      // read and forwarded the request, and sending it again could count a check twice.
      const left = Math.floor(deadline - performance.now());
      if ((error as { neverSent?: boolean }).neverSent === true && left >= 1) return await this.#send(path, body, left);
      throw error;
    }
  }

  #send(path: string, body: string, timeoutMs: number): Promise<Reply> {
    const url = new URL(path, this.#base);
    const origin = this.#base.origin;
    let req: ClientRequest | undefined;
    const exchange = new Promise<Reply>((resolve, reject) => {
      const r = this.#request(url, {
        method: "POST",
        agent: this.#agent,
        // The service refuses (504) a call it would start deciding after this instant: a check
        // this client already answered by its timeout policy is never counted later.
        headers: {
          ...this.#headers,
          "content-length": Buffer.byteLength(body),
          "sluice-deadline": String(systemClock.now() + timeoutMs),
        },
      });
      req = r;
      let connected = false;
      r.on("socket", (socket: Socket) => {
        if (!socket.connecting) connected = true;
        else socket.once("connect", () => (connected = true));
      });
      r.on("error", (cause: Error & { code?: string }) => {
        const error = new StoreError(`sluice service at ${origin} failed: ${cause.code ?? cause.message}`, { cause });
        reject(connected ? error : Object.assign(error, { neverSent: true }));
      });
      r.on("response", (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", (cause) =>
          reject(new StoreError(`sluice service reply was cut off: ${cause.message}`, { cause })),
        );
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown;
          try {
            parsed = text === "" ? undefined : JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      });
      r.end(body);
    });
    return withTimeout(exchange, timeoutMs, () => {
      req?.destroy();
      throw timeoutError(`sluice service at ${origin}`, timeoutMs);
    });
  }

  /** Closes every socket. */
  close(): void {
    this.#agent.destroy();
  }
}
