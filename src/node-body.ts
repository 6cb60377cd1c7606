// Request bodies read straight from Node's IncomingMessage. @hono/node-server hands the app a
// lightweight Request and builds the real one (an undici Request with its AbortSignal, a Web
// stream over the Node stream) only when the body is first touched: for a small POST that costs
// more CPU than the rest of an MCP call's HTTP handling together. On Node the entry point
// (src/main.ts) remembers each request's IncomingMessage and installs `readNodeBody` as the body
// source of src/http/body.ts; Deno, Bun and requests from elsewhere read `req.body` as before.
// A body over its limit is drained (read and discarded, bounded) before the 413 goes out, so that
// a client still writing it reads the answer rather than EPIPE (see readNodeBody below); a body
// the drain cannot take is answered and its connection closed in stages (see lingerAfterAnswer).
// No Node import here: the IncomingMessage is described by the few members used.
import { concatChunks, type BodySource } from "./http/body.ts";

/** What of Node's IncomingMessage this module uses. */
interface IncomingBody {
  readonly socket?: LingeringSocket | null;
  readonly readableEnded: boolean;
  readonly complete: boolean;
  readonly headers: Record<string, string | string[] | undefined>;
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "end" | "close", listener: () => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
  pause(): unknown;
  resume(): unknown;
}

/** What of the request's net.Socket the staged close uses. */
interface LingeringSocket {
  readonly destroyed: boolean;
  destroySoon?: () => void;
  end(): unknown;
  destroy(): unknown;
  once(event: "close", listener: () => void): unknown;
}

/** The IncomingMessage of every request the runtime handed in, until the request is collected. */
const incoming = new WeakMap<Request, IncomingBody>();

/** Called with each request and the second fetch argument @hono/node-server passes (`{incoming, outgoing}`). */
export function rememberIncoming(req: Request, env: unknown): void {
  // requests without a body (most of them) are never read: nothing to remember
  if (req.method === "GET" || req.method === "HEAD") return;
  const body = (env as { incoming?: IncomingBody } | undefined)?.incoming;
  if (body && typeof body.on === "function") incoming.set(req, body);
}

/**
 * The most bytes past a body's limit read and discarded before the 413 (nginx's lingering close,
 * done before the answer): a client that writes a 10 MiB body whole reads the 413 once it is
 * done, where closing under it made it read EPIPE or a reset instead of the answer.
 */
export const DRAIN_MAX_BYTES = 16 * 1024 * 1024;
/** The longest a drain lasts: a slower upload is answered and cut when it is up. */
export const DRAIN_MAX_MS = 5_000;
/** Drains at once in this process; a body over its limit beyond them is answered and cut at once. */
export const MAX_DRAINS = 64;
/**
 * After a cut, how long and how many bytes the connection is still read (and discarded) once its
 * 413 and its end have been sent, before it is destroyed: the staged close of RFC 9112 section
 * 9.6. Destroying a connection with bytes unread sends a reset, and a client that is still
 * writing then reads EPIPE from its next write, not the 413 already in its socket.
 */
export const LINGER_MS = 2_000;
export const LINGER_MAX_BYTES = 16 * 1024 * 1024;

let drains = 0;

/**
 * Reads the body of a request `rememberIncoming` saw: its bytes, or null once more than
 * `maxBytes` arrived; rejects when the client goes away mid-body. Undefined for a request it did
 * not see. Over the limit, the rest is drained first, within DRAIN_MAX_BYTES, DRAIN_MAX_MS and
 * MAX_DRAINS; a body that declares a rest larger than the drain takes is not drained at all.
 * Whatever is left unread when null resolves is cut with the connection (the 413 says
 * `Connection: close`).
 */
export const readNodeBody: BodySource = (req, maxBytes) => {
  const stream = incoming.get(req);
  if (!stream) return undefined;
  if (stream.readableEnded) return Promise.resolve(new Uint8Array(0));
  return new Promise<Uint8Array | null>((resolve, reject) => {
    let chunks: Uint8Array[] = [];
    let total = 0;
    let draining = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const done = () => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onError);
      stream.off("close", onClose);
      if (draining) {
        draining = false;
        drains--;
        clearTimeout(timer);
      }
    };
    // answer without reading the rest: the connection closes in stages after the 413
    const cut = () => {
      done();
      lingerAfterAnswer(stream);
      resolve(null);
    };
    const onData = (chunk: Uint8Array) => {
      total += chunk.byteLength;
      if (draining) {
        if (total - maxBytes > DRAIN_MAX_BYTES) cut();
        return;
      }
      if (total <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      chunks = [];
      const declared = Number(stream.headers["content-length"]);
      if (drains >= MAX_DRAINS || (Number.isFinite(declared) && declared - maxBytes > DRAIN_MAX_BYTES)) return cut();
      draining = true;
      drains++;
      timer = setTimeout(cut, DRAIN_MAX_MS);
    };
    const onEnd = () => {
      // a drained body: the connection closes after the 413 with nothing left unread
      const body = draining ? null : concatChunks(chunks, total);
      done();
      resolve(body);
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    // a connection closed before the body ended (on some Node versions without an error event)
    const onClose = () => {
      if (stream.complete) return;
      done();
      reject(new Error("The client closed the connection before the request body ended"));
    };
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
    stream.on("close", onClose);
  });
};

/**
 * Closes the connection of a request whose body was cut in stages: Node's HTTP server calls
 * `destroySoon` once the answer (which says `Connection: close`) is written; here that sends the
 * end after the answer and goes on reading and discarding the body until the client closes its
 * side, LINGER_MS pass or LINGER_MAX_BYTES arrive. A client that stops writing when it reads the
 * end (most do) is closed cleanly; one that writes on has had the time to read its answer.
 */
function lingerAfterAnswer(stream: IncomingBody): void {
  const socket = stream.socket;
  if (!socket || typeof socket.destroySoon !== "function") {
    stream.pause();
    return;
  }
  let read = 0;
  const discard = (chunk: Uint8Array) => {
    read += chunk.byteLength;
    if (read > LINGER_MAX_BYTES) socket.destroy();
  };
  stream.on("data", discard);
  // the client closing its side ends the body with an error: that is the expected end here
  stream.on("error", () => {});
  stream.resume();
  let timer: ReturnType<typeof setTimeout> | undefined;
  socket.destroySoon = () => {
    if (timer !== undefined || socket.destroyed) return;
    socket.end();
    timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once("close", () => clearTimeout(timer));
  };
}
