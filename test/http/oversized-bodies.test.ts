// Oversized request bodies through a listening server: the client that writes its whole body reads
// the 413 (the server drains the rest, bounded, instead of closing under it), and the drain cuts a
// slow or endless upload within its bounds of time and bytes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { DRAIN_MAX_BYTES, DRAIN_MAX_MS } from "../../src/node-body.ts";
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

/** A raw connection: what it has read so far, and when (ms after open) the server ended or reset it. */
function rawClient(url: string) {
  const { hostname, port } = new URL(url);
  const socket: Socket = connect(Number(port), hostname);
  const opened = performance.now();
  let received = "";
  let closedAfterMs: number | undefined;
  socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) =>
    socket.on("close", () => {
      closedAfterMs ??= performance.now() - opened;
      resolve();
    }),
  );
  return {
    socket,
    closed,
    received: () => received,
    closedAfterMs: () => closedAfterMs,
    /** writes `bytes` unless the socket is gone; false once it is */
    write: (bytes: Uint8Array) => !socket.destroyed && socket.writable && socket.write(bytes),
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

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
    const client = rawClient(suite.server.url);
    client.socket.write(`POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const mib = new Uint8Array(1024 * 1024).fill(0x20);
    const frame = Buffer.concat([Buffer.from(`${mib.length.toString(16)}\r\n`), mib, Buffer.from("\r\n")]);
    let written = 0;
    while (client.closedAfterMs() === undefined && written < 4 * DRAIN_MAX_BYTES) {
      if (!client.write(frame)) await new Promise<void>((resolve) => {
        const done = () => resolve();
        client.socket.once("drain", done);
        client.socket.once("close", done);
      });
      written += frame.length;
    }
    await client.closed;
    assert.match(client.received(), /^HTTP\/1\.1 413 /);
    // cut after at most the body limit and the drain's bytes (and what sat in socket buffers)
    assert.ok(written < 1024 * 1024 + DRAIN_MAX_BYTES + 8 * 1024 * 1024, `wrote ${written} bytes before the cut`);
    assert.ok(client.closedAfterMs()! < DRAIN_MAX_MS + 2_000);
  });
});
