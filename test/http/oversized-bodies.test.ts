// Oversized request bodies through a listening server: the client that writes its whole body reads
// the 413 (the server drains the rest, bounded, instead of closing under it), and the drain cuts a
// slow or endless upload within its bounds of time and bytes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { DRAIN_MAX_BYTES, DRAIN_MAX_MS, LINGER_MAX_BYTES, LINGER_MS } from "../../src/node-body.ts";
import { eachDatabase } from "../support/db.ts";
import { fixtureSuite } from "../support/server.ts";

const TEN_MIB = new Uint8Array(10 * 1024 * 1024).fill(0x20);

/** The status and parsed body of one fetch of a 10 MiB body, or the code of the error it threw. */
async function sendTenMiB(url: string): Promise<{ status: number; body: { error?: string; code?: string } } | { failure: string }> {
  try {
    const res = await fetch(`${url}/api/v1/batch`, { method: "POST", headers: { "Content-Type": "application/json" }, body: TEN_MIB });
    return { status: res.status, body: (await res.json()) as { error?: string; code?: string } };
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return { failure: cause?.code ?? cause?.message ?? (err as Error).message };
  }
}

/** The same sent by node:http, which writes the whole body before it reads (it read EPIPE before the drain). */
function sendTenMiBByNodeHttp(url: string): Promise<{ status: number; body: { error?: string; code?: string } } | { failure: string }> {
  return new Promise((resolve) => {
    const req = httpRequest(`${url}/api/v1/batch`, { method: "POST", headers: { "Content-Type": "application/json", "Content-Length": String(TEN_MIB.length) } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => setImmediate(() => failure ?? resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) })));
    });
    // an error after the answer (EPIPE while the rest was written) is a failure too
    let failure: string | undefined;
    req.on("error", (err: NodeJS.ErrnoException) => resolve({ failure: (failure = err.code ?? err.message) }));
    req.end(TEN_MIB);
  });
}

/**
 * A raw connection: what it has read so far, when (ms after open) the server ended or reset it,
 * and the error it saw. `allowHalfOpen` keeps its side open after the server's end.
 */
function rawClient(url: string, options: { allowHalfOpen?: boolean } = {}) {
  const { hostname, port } = new URL(url);
  const socket: Socket = connect({ port: Number(port), host: hostname, allowHalfOpen: options.allowHalfOpen ?? false });
  const opened = performance.now();
  let received = "";
  let closedAfterMs: number | undefined;
  let error: string | undefined;
  const ended = new Promise<void>((resolve) => socket.once("end", () => resolve()));
  socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
  socket.on("error", (err: NodeJS.ErrnoException) => (error ??= err.code ?? err.message));
  const closed = new Promise<void>((resolve) =>
    socket.on("close", () => {
      closedAfterMs ??= performance.now() - opened;
      resolve();
    }),
  );
  return {
    socket,
    closed,
    ended,
    received: () => received,
    closedAfterMs: () => closedAfterMs,
    error: () => error,
    /** writes `bytes` unless the socket is gone; false once it is */
    write: (bytes: Uint8Array) => !socket.destroyed && socket.writable && socket.write(bytes),
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A half-open raw client that sent a body declaring more than the drain takes, once it has read
 * the 413 and the server's end: the server answers such a body at once.
 */
async function answeredAtOnce(url: string) {
  const client = rawClient(url, { allowHalfOpen: true });
  client.socket.write(`POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nContent-Length: ${1024 * 1024 + DRAIN_MAX_BYTES + 1}\r\n\r\n`);
  client.write(new Uint8Array(1024 * 1024 + 1).fill(0x20));
  await client.ended;
  return client;
}

/** Writes `bytes` again and again as fast as the socket takes them, until it closes or `most` are written; the bytes written. */
async function writeUntilClosed(client: ReturnType<typeof rawClient>, bytes: Uint8Array, most: number): Promise<number> {
  let written = 0;
  while (client.closedAfterMs() === undefined && written < most) {
    if (!client.write(bytes)) await new Promise<void>((resolve) => {
      client.socket.once("drain", () => resolve());
      client.socket.once("close", () => resolve());
    });
    written += bytes.byteLength;
  }
  return written;
}

/** One MiB of spaces as a chunk of a chunked body. */
const CHUNK_FRAME = Buffer.concat([Buffer.from(`${(1024 * 1024).toString(16)}\r\n`), new Uint8Array(1024 * 1024).fill(0x20), Buffer.from("\r\n")]);

/** What a loopback connection holds in flight at most: 6 MiB received, 4 MiB sent, a frame queued, and room. */
const BUFFERED = 12 * 1024 * 1024;

/** A chunked upload that never ends, written as fast as the server reads, until it is closed. */
async function endlessUpload(url: string) {
  const client = rawClient(url);
  client.socket.write(`POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
  const written = await writeUntilClosed(client, CHUNK_FRAME, 4 * DRAIN_MAX_BYTES);
  await client.closed;
  return { client, written };
}

eachDatabase("oversized bodies", (get) => {
  const suite = fixtureSuite(get);

  test("50 clients that write a whole 10 MiB body to /batch all read the 413 JSON error: no EPIPE, no reset", { timeout: 120_000 }, async () => {
    const outcomes: Awaited<ReturnType<typeof sendTenMiB>>[] = [];
    // ten at a time, as a busy client library would: 50 by fetch, then 50 by node:http
    for (const send of [sendTenMiB, sendTenMiBByNodeHttp]) {
      for (let wave = 0; wave < 5; wave++) {
        outcomes.push(...(await Promise.all(Array.from({ length: 10 }, () => send(suite.server.url)))));
      }
    }
    assert.equal(outcomes.length, 100);
    const failures = outcomes.flatMap((o) => ("failure" in o ? [o.failure] : []));
    assert.deepEqual(failures, [], `transport failures: ${failures.join(", ")}`);
    for (const o of outcomes) {
      assert.ok("status" in o);
      assert.equal(o.status, 413);
      assert.equal(o.body.code, "INVALID_REQUEST");
      assert.match(o.body.error ?? "", /too large: the limit is 1 MiB/);
    }
    // the server serves on after them
    const health = await fetch(`${suite.server.url}/healthz`);
    assert.equal(health.status, 200);
  });

  test("a slow oversized upload reads its 413 and is cut once the drain's time is up", { timeout: 30_000 }, async () => {
    const client = rawClient(suite.server.url);
    // a rest the drain could take in bytes, were it not so slow
    const declared = 10 * 1024 * 1024;
    client.socket.write(`POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`);
    // 1 MiB and a bit at once (over the limit), then 16 KiB every 50 ms: about 320 KiB/s
    client.write(new Uint8Array(1024 * 1024 + 1).fill(0x20));
    const started = performance.now();
    const chunk = new Uint8Array(16 * 1024).fill(0x20);
    while (client.closedAfterMs() === undefined && performance.now() - started < DRAIN_MAX_MS + 10_000) {
      client.write(chunk);
      await sleep(50);
    }
    await client.closed;
    assert.match(client.received(), /^HTTP\/1\.1 413 /);
    assert.match(client.received(), /"code":"INVALID_REQUEST"/);
    assert.match(client.received(), /connection: close/i);
    const cutAfter = client.closedAfterMs()!;
    assert.ok(cutAfter < DRAIN_MAX_MS + 2_000, `cut after ${cutAfter.toFixed(0)} ms, the drain lasts at most ${DRAIN_MAX_MS} ms`);
    // it was drained for a while, not dropped at once
    assert.ok(cutAfter > DRAIN_MAX_MS - 500, `cut after only ${cutAfter.toFixed(0)} ms`);
  });

  test("the server answers others while a slow upload drains", { timeout: 30_000 }, async () => {
    const client = rawClient(suite.server.url);
    client.socket.write(`POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nContent-Length: ${2 * 1024 * 1024}\r\n\r\n`);
    client.write(new Uint8Array(1024 * 1024 + 1).fill(0x20));
    await sleep(200);
    const t0 = performance.now();
    const health = await fetch(`${suite.server.url}/healthz`);
    assert.equal(health.status, 200);
    assert.ok(performance.now() - t0 < 1_000);
    assert.equal(client.closedAfterMs(), undefined, "still draining");
    client.socket.destroy();
  });

  test("a body that declares more than the drain takes is answered and cut at once", { timeout: 30_000 }, async () => {
    const client = rawClient(suite.server.url);
    client.socket.write(`POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nContent-Length: ${1024 * 1024 + DRAIN_MAX_BYTES + 1}\r\n\r\n`);
    client.write(new Uint8Array(1024 * 1024 + 1).fill(0x20));
    await client.closed;
    assert.match(client.received(), /^HTTP\/1\.1 413 /);
    assert.ok(client.closedAfterMs()! < 2_000, `cut after ${client.closedAfterMs()!.toFixed(0)} ms`);
  });

  test("a fast endless upload is cut once the drain has read its bytes", { timeout: 30_000 }, async () => {
    const { client, written } = await endlessUpload(suite.server.url);
    assert.match(client.received(), /^HTTP\/1\.1 413 /);
    // cut after at most the body limit, the drain's and the linger's bytes, and what was in flight
    assert.ok(written < 1024 * 1024 + DRAIN_MAX_BYTES + LINGER_MAX_BYTES + BUFFERED, `wrote ${written} bytes before the cut`);
    assert.ok(client.closedAfterMs()! < DRAIN_MAX_MS + 2_000);
  });

  test("an endless upload reads its 413 every time: 30 in a row, none reset before the answer", { timeout: 60_000 }, async () => {
    const missed: string[] = [];
    for (let i = 0; i < 30; i++) {
      const { client } = await endlessUpload(suite.server.url);
      if (!/^HTTP\/1\.1 413 /.test(client.received())) missed.push(`run ${i}: ${client.error() ?? "no error"}, read ${JSON.stringify(client.received().slice(0, 20))}`);
    }
    assert.deepEqual(missed, []);
  });

  test("the close after a cut is staged: the 413 and the end arrive, then the server still reads what follows", { timeout: 30_000 }, async () => {
    const client = await answeredAtOnce(suite.server.url);
    assert.match(client.received(), /^HTTP\/1\.1 413 /);
    assert.match(client.received(), /connection: close/i);
    // the server's side is ended, not destroyed: more of the body is read, not reset
    for (let i = 0; i < 4; i++) {
      client.write(new Uint8Array(256 * 1024).fill(0x20));
      await sleep(20);
    }
    assert.equal(client.error(), undefined, "the writes after the answer were taken");
    assert.equal(client.closedAfterMs(), undefined, "still open while the client writes");
    // the client closes its side: the server closes at once, with no reset
    client.socket.end();
    const t0 = performance.now();
    await client.closed;
    assert.ok(performance.now() - t0 < 1_000, `closed ${(performance.now() - t0).toFixed(0)} ms after the client's end`);
    assert.equal(client.error(), undefined);
  });

  test("a client that keeps its side open after the 413 is let go when the linger is up: a write then is reset", { timeout: 30_000 }, async () => {
    const client = await answeredAtOnce(suite.server.url);
    assert.match(client.received(), /^HTTP\/1\.1 413 /);
    // halfway through the linger a write is still read
    await sleep(LINGER_MS / 2);
    client.write(new Uint8Array(64 * 1024).fill(0x20));
    await sleep(50);
    assert.equal(client.error(), undefined, "a write within the linger is taken");
    // once it is up the server has let the connection go: a write then is answered by a reset,
    // which the client reads as an error on its write after that
    await sleep(LINGER_MS / 2 + 1_000);
    for (let i = 0; i < 20 && client.closedAfterMs() === undefined; i++) {
      client.write(new Uint8Array(64 * 1024).fill(0x20));
      await sleep(50);
    }
    assert.notEqual(client.closedAfterMs(), undefined, "the connection was let go");
    assert.match(client.error() ?? "", /ECONNRESET|EPIPE/);
  });

  test("a client that writes on past the linger's bytes is cut before they are all read", { timeout: 30_000 }, async () => {
    const client = await answeredAtOnce(suite.server.url);
    const written = await writeUntilClosed(client, new Uint8Array(1024 * 1024).fill(0x20), 4 * LINGER_MAX_BYTES);
    await client.closed;
    assert.ok(written < LINGER_MAX_BYTES + BUFFERED, `wrote ${written} bytes after the answer`);
    assert.ok(client.closedAfterMs()! < LINGER_MS, `closed after ${client.closedAfterMs()!.toFixed(0)} ms: by its bytes, not its time`);
  });
});
