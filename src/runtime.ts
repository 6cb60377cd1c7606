// What the entry points hand the app from the runtime they run on (Node, Deno or Bun): the peer
// address of a connection, a writer for stdout, and Node's own gzip. Shared by src/main.ts and
// the bench's logging server (scripts/bench-logging.ts), which serves the same app.
import process from "node:process";
import { gzip } from "node:zlib";
import type { Gzip } from "./http/compress.ts";

/**
 * The connection's peer address from each runtime's second fetch argument: @hono/node-server's
 * `{incoming}`, Deno.serve's handler info, Bun's server.
 */
export function peerAddress(req: Request, env: unknown): string | undefined {
  const e = env as {
    incoming?: { socket?: { remoteAddress?: string } };
    remoteAddr?: { hostname?: string };
    requestIP?: (req: Request) => { address?: string } | null;
  } | undefined;
  return e?.incoming?.socket?.remoteAddress ?? e?.remoteAddr?.hostname ?? e?.requestIP?.(req)?.address ?? undefined;
}

/** Writes log lines to this runtime's stdout (Deno has no process.stdout.write of its own). */
export function stdoutWriter(): (text: string) => void {
  const g = globalThis as { Deno?: { stdout: { writeSync(b: Uint8Array): number } } };
  if (g.Deno) {
    const encoder = new TextEncoder();
    return (text) => {
      const bytes = encoder.encode(text);
      for (let at = 0; at < bytes.length; ) at += g.Deno!.stdout.writeSync(bytes.subarray(at));
    };
  }
  return (text) => void process.stdout.write(text);
}

/**
 * Response bodies gzipped by zlib itself on Node: its CompressionStream is the same zlib behind Web
 * streams that cost as much CPU again as the deflate. At level 1 rather than the default 6: a
 * reverse page of 34 KB deflates in 0.25 ms instead of 0.69 ms (on the page's critical path) into
 * 5.1 KB instead of 4.8 KB. Deno and Bun keep their own CompressionStream.
 */
export function runtimeGzip(): Gzip | undefined {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Deno || g.Bun) return undefined;
  return (bytes) =>
    new Promise((resolve, reject) => gzip(bytes, { level: 1 }, (err, out) => (err ? reject(err) : resolve(out as Uint8Array<ArrayBuffer>))));
}
