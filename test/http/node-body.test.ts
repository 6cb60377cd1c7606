// Request bodies read straight from Node's IncomingMessage (src/node-body.ts), as src/main.ts and
// the test servers read them: the bytes as sent however they are framed, null over the limit, a
// rejection when the client goes away mid-body, and a server that keeps answering after that.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, request as httpRequest, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { readNodeBody, rememberIncoming } from "../../src/node-body.ts";
import { eachDatabase } from "../support/db.ts";
import { fixtureSuite, json } from "../support/server.ts";
import { W } from "../support/fixtures.ts";

/** A Node server that reads each request's body with readNodeBody (limit `max`) and reports what it got. */
async function readingServer(max: number) {
  const outcomes: Array<{ bytes?: string; tooLarge?: boolean; error?: string }> = [];
  const server = createServer((incoming, outgoing) => {
    const req = new Request(`http://127.0.0.1${incoming.url}`, { method: "POST" });
    rememberIncoming(req, { incoming });
    readNodeBody(req, max)!.then(
      (body) => {
        outcomes.push(body === null ? { tooLarge: true } : { bytes: new TextDecoder().decode(body) });
        outgoing.writeHead(body === null ? 413 : 200, { Connection: body === null ? "close" : "keep-alive" });
        outgoing.end(body === null ? "too large" : `read ${body.byteLength}`);
      },
      (err: Error) => {
        outcomes.push({ error: err.message });
        outgoing.destroy();
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return { port, outcomes, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** POSTs `parts` as a chunked body, one write every `gapMs`; the status and body answered. */
function postInParts(port: number, parts: string[], gapMs: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method: "POST", path: "/", headers: { "Content-Type": "application/json" } }, (res: IncomingMessage) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    let i = 0;
    const next = () => {
      if (i === parts.length) return void req.end();
      req.write(parts[i++]);
      setTimeout(next, gapMs);
    };
    next();
  });
}

describe("reading a body from the IncomingMessage", () => {
  test("a request it never saw is left to req.body", () => {
    assert.equal(readNodeBody(new Request("http://127.0.0.1/", { method: "POST", body: "x" }), 10), undefined);
  });

  test("a chunked body arriving in pieces is read whole; the limit counts bytes read, not a header", async () => {
    const server = await readingServer(64);
    try {
      const parts = ['{"wallets":', '["0x', "1".repeat(40), '"]}'];
      assert.deepEqual(await postInParts(server.port, parts, 20), { status: 200, text: `read ${parts.join("").length}` });
      assert.deepEqual(server.outcomes.at(-1), { bytes: parts.join("") });
      // 70 bytes without Content-Length: refused once the 65th byte arrives
      const over = await postInParts(server.port, ["x".repeat(40), "y".repeat(30)], 20);
      assert.equal(over.status, 413);
      assert.deepEqual(server.outcomes.at(-1), { tooLarge: true });
    } finally {
      await server.close();
    }
  });

  test("a client that goes away mid-body is a rejection, not a hang", async () => {
    const server = await readingServer(1024);
    try {
      await new Promise<void>((resolve) => {
        const req = httpRequest({ host: "127.0.0.1", port: server.port, method: "POST", path: "/", headers: { "Content-Length": "500" } });
        req.on("error", () => resolve());
        req.write("x".repeat(100));
        setTimeout(() => req.destroy(), 50);
      });
      for (let i = 0; i < 100 && server.outcomes.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(server.outcomes.length, 1);
      assert.ok(server.outcomes[0].error, JSON.stringify(server.outcomes[0]));
    } finally {
      await server.close();
    }
  });
});

eachDatabase("POST bodies through a listening server", (get) => {
  const suite = fixtureSuite(get);

  test("a batch body sent in pieces is answered as the same body sent at once", async () => {
    suite.nextMinute();
    const body = JSON.stringify({ wallets: [W.full, W.ensOnly] });
    const url = new URL(suite.server.url);
    const inParts = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(
        { host: url.hostname, port: url.port, method: "POST", path: "/api/v1/batch", headers: { "Content-Type": "application/json", Authorization: `Bearer ${suite.key}` } },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", reject);
      req.write(body.slice(0, 20));
      setTimeout(() => req.end(body.slice(20)), 30);
    });
    assert.equal(inParts.status, 200, inParts.text);
    const atOnce = await suite.server.request("/api/v1/batch", { method: "POST", key: suite.key, headers: { "Content-Type": "application/json" }, body });
    const [a, b] = [JSON.parse(inParts.text), await json(atOnce)];
    assert.deepEqual(a.data, b.data);
  });

  test("after a client abandons a body mid-way, the server answers the next request", async () => {
    const url = new URL(suite.server.url);
    await new Promise<void>((resolve) => {
      const req = httpRequest({
        host: url.hostname,
        port: url.port,
        method: "POST",
        path: "/api/v1/batch",
        headers: { "Content-Type": "application/json", "Content-Length": "4000", Authorization: `Bearer ${suite.key}` },
      });
      req.on("error", () => resolve());
      req.write('{"wallets":["0x');
      setTimeout(() => (req.destroy(), resolve()), 50);
    });
    const res = await suite.server.request("/healthz");
    assert.equal(res.status, 200);
    const empty = await suite.server.request("/api/v1/batch", { method: "POST", key: suite.key, headers: { "Content-Type": "application/json" } });
    assert.equal(empty.status, 400);
    assert.equal((await json(empty)).code, "INVALID_REQUEST");
  });
});
