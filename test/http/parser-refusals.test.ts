// Requests Node's HTTP parser refuses before the app sees them (bad framing, headers or URL over
// the 16 KiB limit) are answered {error, code} by `npm start`'s server (src/main.ts, Node's
// clientError), over a raw socket since fetch cannot send them.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { parserRefusal } from "../../src/http/errors.ts";
import { startMainServer, type Running } from "../support/process.ts";

/** Sends raw bytes and reads until the server closes the connection. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let answer = "";
    socket.setEncoding("latin1");
    socket.on("data", (d) => (answer += d));
    socket.on("error", (err) => (answer ? resolve(answer) : reject(err)));
    socket.on("close", () => resolve(answer));
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer to ${JSON.stringify(request.slice(0, 80))}`)));
    socket.write(request);
  });
}

function parse(answer: string): { status: number; headers: Map<string, string>; body: any } {
  const [head, ...rest] = answer.split("\r\n\r\n");
  const [statusLine, ...lines] = head.split("\r\n");
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1]);
  const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
  const text = rest.join("\r\n\r\n");
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status, headers, body };
}

function assertRefusal(answer: string, status: number, code: string) {
  const res = parse(answer);
  assert.equal(res.status, status, answer.slice(0, 500));
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/, answer.slice(0, 500));
  assert.deepEqual(Object.keys(res.body ?? {}).sort(), ["code", "error"], answer.slice(0, 500));
  assert.equal(res.body.code, code);
  assert.ok(res.body.error.length > 0);
  assert.equal(res.headers.get("connection"), "close");
}

describe("requests the HTTP parser refuses: {error, code} from npm start's server (Node)", () => {
  let server: Running;
  let stop: () => Promise<void>;

  before(async () => {
    ({ server, stop } = await startMainServer());
  });
  after(async () => {
    await stop?.();
  });

  test("a well-formed request still reaches the app", async () => {
    const res = parse(await rawExchange(server.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: "ok" });
  });

  test("bad framing: a Content-Length that is not a number is 400 INVALID_REQUEST", async () => {
    const answer = await rawExchange(server.port, "POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n");
    assertRefusal(answer, 400, "INVALID_REQUEST");
  });

  test("bad framing: both Content-Length and Transfer-Encoding is 400 INVALID_REQUEST", async () => {
    const answer = await rawExchange(
      server.port,
      "POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    );
    assertRefusal(answer, 400, "INVALID_REQUEST");
  });

  test("bad framing: a malformed chunk size is 400 INVALID_REQUEST", async () => {
    const answer = await rawExchange(server.port, "POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n");
    assertRefusal(answer, 400, "INVALID_REQUEST");
  });

  test("not HTTP at all is 400 INVALID_REQUEST", async () => {
    assertRefusal(await rawExchange(server.port, "HELLO THERE\r\n\r\n"), 400, "INVALID_REQUEST");
  });

  test("headers over the limit are 431 HEADERS_TOO_LARGE", async () => {
    const answer = await rawExchange(server.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: ${"a".repeat(20_000)}\r\n\r\n`);
    assertRefusal(answer, 431, "HEADERS_TOO_LARGE");
  });

  test("a URL over the limit is 431 HEADERS_TOO_LARGE", async () => {
    const answer = await rawExchange(server.port, `GET /api/v1/wallet/0x${"a".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    assertRefusal(answer, 431, "HEADERS_TOO_LARGE");
  });

  test("the answer's Content-Length counts the body's bytes", () => {
    for (const code of [undefined, "HPE_INVALID_METHOD", "HPE_HEADER_OVERFLOW", "ERR_HTTP_REQUEST_TIMEOUT"]) {
      const raw = parserRefusal(code);
      const [head, body] = raw.split("\r\n\r\n");
      assert.equal(Number(/Content-Length: (\d+)/.exec(head)?.[1]), Buffer.byteLength(body), raw);
    }
  });
});
