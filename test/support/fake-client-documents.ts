// A local host of OAuth client ID metadata documents as a real HTTP server on 127.0.0.1. Each
// path answers one way: a document, a redirect, a gzip body, a chunked body without Content-Length, a body that never finishes, or a 404. Counts requests per path, so
// tests can see what was cached.
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";

export type DocumentAnswer =
  | { kind: "json"; body: unknown }
  | { kind: "redirect"; to: string }
  | { kind: "gzip"; body: unknown }
  | { kind: "chunked"; body: unknown }
  | { kind: "slow"; afterMs: number; body: unknown }
  | { kind: "status"; status: number };

export interface FakeDocuments {
  url: string;
  set(path: string, answer: DocumentAnswer): void;
  hits(path: string): number;
  close(): Promise<void>;
}

export async function startFakeDocuments(): Promise<FakeDocuments> {
  const answers = new Map<string, DocumentAnswer>();
  const hits = new Map<string, number>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const json = (res: ServerResponse, body: unknown, headers: Record<string, string> = {}) => {
    const text = Buffer.from(JSON.stringify(body));
    res.writeHead(200, { "content-type": "application/json", "content-length": String(text.length), ...headers });
    res.end(text);
  };
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const answer = answers.get(path);
    if (!answer) return res.writeHead(404).end();
    switch (answer.kind) {
      case "json":
        return json(res, answer.body);
      case "redirect":
        return res.writeHead(302, { location: answer.to }).end();
      case "gzip": {
        const body = gzipSync(Buffer.from(JSON.stringify(answer.body)));
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip", "content-length": String(body.length) });
        return res.end(body);
      }
      case "chunked": {
        // no Content-Length: only the bytes that arrive say how large it is
        const body = Buffer.from(JSON.stringify(answer.body));
        res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
        for (let at = 0; at < body.length; at += 8192) res.write(body.subarray(at, at + 8192));
        return res.end();
      }
      case "slow": {
        res.writeHead(200, { "content-type": "application/json" });
        res.write("{");
        const timer = setTimeout(() => {
          timers.delete(timer);
          res.end(JSON.stringify(answer.body).slice(1));
        }, answer.afterMs);
        timers.add(timer);
        return;
      }
      case "status":
        return res.writeHead(answer.status).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set: (path, answer) => void answers.set(path, answer),
    hits: (path) => hits.get(path) ?? 0,
    close: async () => {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
