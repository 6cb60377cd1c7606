// A webhook receiver for tests (a real HTTP server on 127.0.0.1 that keeps each request's raw
// bytes and answers as told), and the delivery loop of a test server.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createDeliverer, type Deliverer } from "../../src/webhooks/deliver.ts";
import type { Db } from "../../src/db/types.ts";
import type { Outbound } from "../../src/http/outbound.ts";
import type { TestServer } from "../support/server.ts";

export interface Received {
  path: string;
  headers: Record<string, string>;
  raw: Buffer;
  body: any;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** The answer to the next requests, in order; 200 once they are used up. */
  answers: Array<number | { status: number; headers?: Record<string, string> }>;
  /** While set, requests are kept unanswered (a receiver that hangs). */
  hold: boolean;
  /** Resolves once `n` requests have arrived in all. */
  waitFor(n: number, ms?: number): Promise<void>;
  close(): Promise<void>;
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") out[name] = value;
  return out;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const answers: Receiver["answers"] = [];
  const waiting: Array<{ n: number; resolve: () => void }> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      let body: unknown = null;
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        body = null;
      }
      received.push({ path: req.url ?? "", headers: headersOf(req), raw, body });
      for (const w of waiting.filter((w) => received.length >= w.n)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve();
      }
      if (receiver.hold) return;
      const answer = answers.shift() ?? 200;
      const { status, headers } = typeof answer === "number" ? { status: answer, headers: {} } : answer;
      res.writeHead(status, headers);
      res.end("ok");
    });
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const receiver: Receiver = {
    url,
    received,
    answers,
    hold: false,
    waitFor(n, ms = 10_000) {
      if (received.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`expected ${n} deliveries, got ${received.length} in ${ms} ms`)), ms);
        waiting.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
  return receiver;
}

/** The delivery loop of `server`, on its clock and configuration; its log lines in `logs`. */
export function deliverer(db: Db, server: TestServer, outbound: Outbound, logs: string[] = []): Deliverer {
  return createDeliverer({ db, config: server.config, outbound, now: server.clock.now, log: (line) => logs.push(line), idleMs: 50 });
}

export async function deliveryRows(db: Db, endpointId: string) {
  return await db.query<{ id: string; status: string; attempts: number; last_status_code: number | null; event_id: string }>(
    "SELECT id, status, attempts, last_status_code, event_id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at, id",
    [endpointId],
  );
}
