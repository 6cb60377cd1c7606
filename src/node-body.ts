// Request bodies read straight from Node's IncomingMessage. @hono/node-server hands the app a
// lightweight Request and builds the real one (an undici Request with its AbortSignal, a Web
// stream over the Node stream) only when the body is first touched: for a small POST that costs
// more CPU than the rest of an MCP call's HTTP handling together. On Node the entry point
// (src/main.ts) remembers each request's IncomingMessage and installs `readNodeBody` as the body
// source of src/http/body.ts; Deno, Bun and requests from elsewhere read `req.body` as before.
// No Node import here: the IncomingMessage is described by the few members used.
import { concatChunks, type BodySource } from "./http/body.ts";

/** What of Node's IncomingMessage this module uses. */
interface IncomingBody {
  readonly readableEnded: boolean;
  readonly complete: boolean;
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "end" | "close", listener: () => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
  pause(): unknown;
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
 * Reads the body of a request `rememberIncoming` saw: its bytes, or null once more than
 * `maxBytes` arrived (the rest is left unread); rejects when the
 * client goes away mid-body. Undefined for a request it did not see.
 */
export const readNodeBody: BodySource = (req, maxBytes) => {
  const stream = incoming.get(req);
  if (!stream) return undefined;
  if (stream.readableEnded) return Promise.resolve(new Uint8Array(0));
  return new Promise<Uint8Array | null>((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let total = 0;
    const done = () => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onError);
      stream.off("close", onClose);
    };
    const onData = (chunk: Uint8Array) => {
      total += chunk.byteLength;
      if (total > maxBytes) {
        // stop reading: after the answer @hono/node-server drains what is left (bounded in bytes and
        // time) or closes the connection, as it does for a Web body stream left unread
        done();
        stream.pause();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve(concatChunks(chunks, total));
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
