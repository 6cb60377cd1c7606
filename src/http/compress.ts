// Response compression on the Web CompressionStream: gzip everywhere, br where the runtime's
// CompressionStream has it, chosen by Accept-Encoding with its q-values. Bodies under 1 KiB go
// out as they are: hono's own `compress` decides by Content-Length, which our JSON bodies do not
// carry, so it would gzip a 300-byte lookup. Here the body is read and measured first.
import type { MiddlewareHandler } from "hono";

export const COMPRESS_THRESHOLD_BYTES = 1024;

const COMPRESSIBLE = /^\s*(?:application\/(?:json|[^;\s]+\+json)|text\/[^;\s]+)\s*(?:;|$)/i;

/** The encodings this runtime's CompressionStream can write, best first. */
function supportedEncodings(): string[] {
  const out: string[] = [];
  for (const format of ["br", "gzip"]) {
    try {
      new CompressionStream(format as CompressionFormat);
      out.push(format);
    } catch {
      // not offered by this runtime (Node has no br in CompressionStream)
    }
  }
  return out;
}

const SUPPORTED = supportedEncodings();

/**
 * The encoding to answer with, or undefined for identity: the highest q among the supported ones
 * (a tie goes to the better one), `*` standing for any encoding not named, q=0 refusing.
 */
export function chooseEncoding(acceptEncoding: string | null | undefined, supported: string[] = SUPPORTED): string | undefined {
  if (!acceptEncoding) return undefined;
  const q = new Map<string, number>();
  for (const part of acceptEncoding.split(",")) {
    const [name, ...params] = part.trim().split(";");
    if (!name) continue;
    let weight = 1;
    for (const param of params) {
      const [key, value] = param.trim().split("=");
      if (key?.trim().toLowerCase() === "q") {
        const n = Number(value);
        weight = Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 0;
      }
    }
    q.set(name.trim().toLowerCase(), weight);
  }
  let best: { encoding: string; q: number } | undefined;
  for (const encoding of supported) {
    const weight = q.get(encoding) ?? q.get("*") ?? 0;
    if (weight > 0 && (!best || weight > best.q)) best = { encoding, q: weight };
  }
  return best?.encoding;
}

/**
 * A runtime's own gzip of a whole body, handed in by the entry point: on Node, zlib's gzip (the
 * zlib behind its CompressionStream("gzip"), without the Web streams around it that cost as much as
 * the deflate itself), at the level src/main.ts chooses.
 */
export type Gzip = (bytes: Uint8Array) => Promise<Uint8Array<ArrayBuffer>>;

async function compressBytes(bytes: ArrayBuffer, encoding: string): Promise<ArrayBuffer> {
  // the body written whole into the compressor, without a Blob's stream and a pipe in between
  const compressor = new CompressionStream(encoding as CompressionFormat);
  const writer = compressor.writable.getWriter();
  const written = Promise.all([writer.write(new Uint8Array(bytes)), writer.close()]);
  const [compressed] = await Promise.all([new Response(compressor.readable).arrayBuffer(), written]);
  return compressed;
}

/**
 * The response to send for `req`: JSON and text bodies over the threshold compressed for clients
 * that accept it. A plain function around the app's fetch rather than a hono middleware, so the
 * new Response keeps exactly the headers given here (hono's context would merge the old ones).
 */
export async function compressResponse(
  req: Request,
  res: Response,
  options: { threshold?: number; gzip?: Gzip } = {},
): Promise<Response> {
  const threshold = options.threshold ?? COMPRESS_THRESHOLD_BYTES;
  // Only the status and headers are read until the body must be: on Node, @hono/node-server's
  // Response rebuilds itself from its first init when its body is touched, dropping the headers
  // the middlewares added since (rate limits, CORS, request id), so they are copied out first.
  if (req.method === "HEAD" || res.status === 204 || res.status === 206 || res.status === 304) return res;
  if (res.headers.has("Content-Encoding") || !COMPRESSIBLE.test(res.headers.get("Content-Type") ?? "")) return res;
  if (/(?:^|,)\s*no-transform\s*(?:,|$)/i.test(res.headers.get("Cache-Control") ?? "")) return res;
  const vary = res.headers.get("Vary");
  if (!vary) res.headers.set("Vary", "Accept-Encoding");
  else if (vary !== "*" && !/(?:^|,)\s*accept-encoding\s*(?:,|$)/i.test(vary)) res.headers.set("Vary", `${vary}, Accept-Encoding`);
  const encoding = chooseEncoding(req.headers.get("Accept-Encoding"));
  if (!encoding) return res;
  // a body that declares its length under the threshold goes out as it is, unread
  const declared = res.headers.get("Content-Length");
  if (declared !== null && Number(declared) < threshold) return res;
  const headers = new Headers(res.headers);
  const init = { status: res.status, headers };
  const bytes = await res.arrayBuffer();
  if (bytes.byteLength < threshold) return new Response(bytes, init);
  const compressed =
    encoding === "gzip" && options.gzip ? await options.gzip(new Uint8Array(bytes)) : await compressBytes(bytes, encoding);
  headers.set("Content-Encoding", encoding);
  headers.set("Content-Length", String(compressed.byteLength));
  const etag = headers.get("ETag");
  if (etag && !etag.startsWith("W/")) headers.set("ETag", `W/${etag}`);
  return new Response(compressed, init);
}

/** Cache-Control on a route's 200s and 304s (with `etag()` inside it for the validator). */
export function cacheControl(value: string): MiddlewareHandler {
  return async (c, next) => {
    await next();
    if (c.res.status === 200 || c.res.status === 304) c.res.headers.set("Cache-Control", value);
  };
}
