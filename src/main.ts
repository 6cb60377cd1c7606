// Entry point: picks Deno.serve, Bun.serve or @hono/node-server; nothing else is runtime-specific.
import { join } from "node:path";
import type { Socket } from "node:net";
import process from "node:process";
import { lookup } from "node:dns/promises";
import { gzip, gzipSync } from "node:zlib";
import { setFlagsFromString } from "node:v8";
import { setImmediate } from "node:timers";
import { readConfig, type Config } from "./config.ts";
import { createApp } from "./app.ts";
import type { Gzip } from "./http/compress.ts";
import { createFetchOutbound } from "./http/outbound-fetch.ts";
import { parserRefusal } from "./http/errors.ts";
import { openDatabase } from "./db/open.ts";
import { acquireDataDirLock } from "./db/datadir-lock.ts";
import { ensureDemo } from "./index/demo.ts";
import { maintenanceDeps, REACHABILITY_OFF, type MaintenanceDeps } from "./maintenance/run.ts";
import { nextTick, runDueTasks, tickCron, type DailyAt } from "./maintenance/schedule.ts";
import { configuredSources } from "./sources/index.ts";
import { jobRunDeps } from "./jobs/deps.ts";
import { createWorker } from "./jobs/worker.ts";
import type { Outbound } from "./http/outbound.ts";
import { startDelivery } from "./webhooks/deliver.ts";
import { startHubSync } from "./hub/sync.ts";
import { createLogger } from "./observe/log.ts";
import { useBodySource } from "./http/body.ts";
import { useTurnEnd } from "./http/turn.ts";
import { readNodeBody, rememberIncoming } from "./node-body.ts";

type Stop = () => Promise<void>;

/**
 * The connection's peer address from each runtime's second fetch argument: @hono/node-server's
 * `{incoming}`, Deno.serve's handler info, Bun's server.
 */
function peerAddress(req: Request, env: unknown): string | undefined {
  const e = env as {
    incoming?: { socket?: { remoteAddress?: string } };
    remoteAddr?: { hostname?: string };
    requestIP?: (req: Request) => { address?: string } | null;
  } | undefined;
  return e?.incoming?.socket?.remoteAddress ?? e?.remoteAddr?.hostname ?? e?.requestIP?.(req)?.address ?? undefined;
}

async function serve(fetch: (req: Request, env?: unknown) => Promise<Response>, config: Config): Promise<{ stop: Stop; runtime: string }> {
  const g = globalThis as { Deno?: any; Bun?: any };
  if (g.Deno) {
    const server = g.Deno.serve({ port: config.port, hostname: config.host, onListen: () => {} }, fetch);
    return { stop: () => server.shutdown(), runtime: `Deno ${g.Deno.version.deno}` };
  }
  if (g.Bun) {
    const server = g.Bun.serve({ port: config.port, hostname: config.host, fetch });
    return { stop: async () => server.stop(), runtime: `Bun ${g.Bun.version}` };
  }
  const { serve: nodeServe } = await import("@hono/node-server");
  const server = nodeServe({ fetch, port: config.port, hostname: config.host });
  // Requests Node's HTTP parser refuses (bad framing, headers or URL over the limit) never reach
  // the app: answer them {error, code} too, where Node would send an empty 400 or 431.
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => {
    const responding = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (err.code === "ECONNRESET" || !socket.writable || responding) return socket.destroy();
    socket.end(parserRefusal(err.code));
  });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  // stop: no new connections, idle keep-alive ones closed now, requests in flight answered; what
  // is still open after the grace period is cut
  const stop = () =>
    new Promise<void>((resolve) => {
      const cut = setTimeout(() => (server as { closeAllConnections?: () => void }).closeAllConnections?.(), config.shutdownGraceMs);
      server.close(() => (clearTimeout(cut), resolve()));
      (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
    });
  return { stop, runtime: `Node.js ${process.versions.node}` };
}

/**
 * Requests to URLs users gave us (src/http/outbound.ts). Node pins each connection to the address
 * it checked (src/outbound-node.ts, loaded only there). Deno's and Bun's fetch resolve the name
 * themselves, so there every request is refused unless OUTBOUND_PROXY names an egress proxy.
 */
async function runtimeOutbound(config: Config): Promise<Outbound & { close(): Promise<void> }> {
  const g = globalThis as { Deno?: any; Bun?: any };
  const { allowHosts, proxyUrl } = config.outbound;
  // the checks before a request is handed to the proxy: node:dns, which Deno and Bun provide too
  const resolve = async (hostname: string) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);
  if (g.Deno) {
    const client = proxyUrl && typeof g.Deno.createHttpClient === "function" ? g.Deno.createHttpClient({ proxy: { url: proxyUrl } }) : undefined;
    const outbound = createFetchOutbound({
      runtime: "Deno",
      allowHosts,
      resolve,
      proxiedFetch: client ? (url, init) => fetch(url, { ...init, client } as RequestInit) : undefined,
    });
    return { ...outbound, close: async () => client?.close() };
  }
  if (g.Bun) {
    const outbound = createFetchOutbound({
      runtime: "Bun",
      allowHosts,
      resolve,
      proxiedFetch: proxyUrl ? (url, init) => fetch(url, { ...init, proxy: proxyUrl, decompress: false } as RequestInit) : undefined,
    });
    return { ...outbound, close: async () => {} };
  }
  const { createNodeOutbound } = await import("./outbound-node.ts");
  return createNodeOutbound({ allowHosts, proxyUrl });
}

/**
 * The daily maintenance (reachability re-check, stats): Deno.cron under Deno (with
 * --unstable-cron), a timer under Node and Bun; both tick hourly at MAINTENANCE_AT's minute and
 * run what is due (src/maintenance/schedule.ts), and run once right after start. Returns stop.
 */
function scheduleMaintenance(deps: MaintenanceDeps, at: DailyAt, stopSignal: AbortController): () => Promise<void> {
  if (!deps.x) deps.log(REACHABILITY_OFF);
  let running: Promise<unknown> = Promise.resolve();
  const tick = () => {
    running = running.then(() => runDueTasks(deps, at)).catch((err: Error) => deps.log(`Maintenance: ${err.message}`, "error"));
    return running;
  };
  const g = globalThis as { Deno?: { cron?: (...args: unknown[]) => unknown } };
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (typeof g.Deno?.cron === "function") {
    g.Deno.cron("walletid-maintenance", tickCron(at), { signal: stopSignal.signal }, async () => void (await tick()));
    void tick();
  } else {
    const loop = async () => {
      await tick();
      if (stopSignal.signal.aborted) return;
      timer = setTimeout(loop, nextTick(new Date(), at).getTime() - Date.now());
      (timer as { unref?: () => void }).unref?.();
    };
    void loop();
  }
  return async () => {
    stopSignal.abort();
    if (timer) clearTimeout(timer);
    await running;
  };
}

function describe(reason: unknown): string {
  return reason instanceof Error ? (reason.stack ?? reason.message) : String(reason);
}

/**
 * Node: V8 decides once, per allocation site, to allocate straight into the old generation the
 * objects of a site whose objects survived a minor GC, and keeps to it. postgres.js builds every
 * row of every statement at one site; once the rows in flight at a few scavenges got the site
 * tenured, every row of every later statement went to the old generation and lived until a major
 * GC (metered GET /wallet: 1 MB promoted per scavenge against 0.1 MB without it, 8-21% less server
 * CPU a request side by side). Our objects live for one request: no site is worth pretenuring.
 */
function noPretenuring(): void {
  if ("Deno" in globalThis || "Bun" in globalThis) return;
  setFlagsFromString("--no-allocation-site-pretenuring");
}

async function main(): Promise<void> {
  noPretenuring();
  const config = readConfig(process.env);
  if (!config.databaseUrl && process.env.REQUIRE_DATABASE_URL === "1") {
    throw new Error("Cannot start: set DATABASE_URL to a postgres:// URL (this image has no embedded database)");
  }
  const logger = createLogger({ level: config.logLevel, format: config.logFormat, write: stdoutWriter() });
  const log = logger.log;
  process.on("exit", () => logger.flush());
  const embedded = !config.databaseUrl;
  const release = embedded ? acquireDataDirLock(config.dataDir) : () => {};
  // the last resort: nothing that slips past its caller (a driver's stray rejection) ends the process
  process.on("unhandledRejection", (reason) => log(`Kept serving after an unhandled rejection: ${describe(reason)}`, "error"));
  process.on("uncaughtException", (err) => log(`Kept serving after an uncaught exception: ${describe(err)}`, "error"));
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    max: config.databasePoolSize,
    dataDir: embedded ? join(config.dataDir, "pgdata") : undefined,
    timeouts: config.databaseTimeouts,
    pooler: config.databasePooler,
    directUrl: config.databaseDirectUrl,
    // one of the pool's connections kept for the metering lane (src/db/postgres.ts)
    lane: true,
  });
  const now = () => new Date();

  if (embedded || process.env.LOAD_DEMO === "1") {
    const demo = await ensureDemo(db, { now: now(), dataDir: embedded ? config.dataDir : undefined });
    // for the person at the terminal, on stderr: never a log line (logs carry no keys)
    if (demo.created) {
      console.error(`Loaded the demo index. Demo API key (shown once${embedded ? `, also saved to ${join(config.dataDir, "demo-api-key")}` : ""}):`);
      console.error(`  ${demo.apiKey}`);
    } else if (embedded) {
      console.error(`Demo API key: see ${join(config.dataDir, "demo-api-key")}`);
    }
  }

  const sources = configuredSources(config, log);
  const outbound = await runtimeOutbound(config);
  const app = createApp({ db, config, now, log, logger, sources, peerAddress, outbound, gzip: runtimeGzip() });
  // WORKER=0 leaves jobs to `npm run worker` processes (PostgreSQL only: the embedded database
  // opens in one process, so there the worker always runs here)
  const worker = config.jobs.worker || embedded ? createWorker(jobRunDeps(config, { db, now, log, sources })) : undefined;
  await worker?.start();
  // every process delivers webhooks: claims with leases share the work (src/webhooks/deliver.ts)
  const delivery = await startDelivery({ db, config, now, log, outbound });
  const maintenanceStop = new AbortController();
  const stopMaintenance = config.maintenance.at
    ? scheduleMaintenance(maintenanceDeps(config, { db, now, log, signal: maintenanceStop.signal }), config.maintenance.at, maintenanceStop)
    : async () => {};
  if (!config.maintenance.at) log("Maintenance is not scheduled (MAINTENANCE_AT=off): run `npm run admin -- maintain` from cron");
  // FARCASTER_HUB_URL: one process at a time (the hub lease) backfills once, then follows the hub
  const stopHub = config.hub
    ? startHubSync({
        db,
        hubUrl: config.hub.url,
        apiKey: config.hub.apiKey,
        concurrency: config.hub.concurrency,
        leaseMs: config.hub.leaseMs,
        pollMs: config.hub.pollMs,
        timeoutMs: config.jobs.upstreamTimeoutMs,
        now,
        log,
      })
    : async () => {};
  // once shutting down, every response says Connection: close, so no client sends another request
  // on a connection about to close (a request that races a close is reset unread, never billed).
  // Node only: Deno's shutdown() and Bun's stop() close their connections themselves.
  let draining = false;
  const onNode = !("Deno" in globalThis) && !("Bun" in globalThis);
  // Node: request bodies are read from the IncomingMessage, not through a Web stream built for them
  if (onNode) useBodySource(readNodeBody);
  // the metering groups wait for the end of the loop's turn with the runtime's check-phase callback
  // (node:timers on all three) rather than a port message, which waits for the loop's next poll
  useTurnEnd(() => new Promise<void>((resolve) => setImmediate(resolve)));
  const fetch = async (req: Request, env?: unknown) => {
    if (onNode) rememberIncoming(req, env);
    const res = await app.fetch(req, env);
    if (draining && onNode) {
      try {
        res.headers.set("Connection", "close");
      } catch {
        // an immutable response (none of ours): the runtime closes the connection anyway
      }
    }
    return res;
  };
  const { stop, runtime } = await serve(fetch, config);
  log(
    `walletid listening on ${config.publicUrl} (${runtime}, ${embedded ? `embedded database in ${config.dataDir}` : "PostgreSQL"})${worker ? "" : "; job worker off (WORKER=0)"}`,
  );

  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    draining = true;
    await stop().catch(() => {});
    await stopMaintenance();
    await stopHub();
    await worker?.stop();
    await delivery?.stop();
    await app.close();
    await outbound.close();
    await db.close();
    release();
    logger.flush();
    process.exit(0);
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

main().catch((err: Error) => {
  console.error(err.message.startsWith("Cannot") || err.message.startsWith("The embedded") ? err.message : `Cannot start: ${err.message}`);
  process.exit(1);
});

/** Writes log lines to this runtime's stdout (Deno has no process.stdout.write of its own). */
function stdoutWriter(): (text: string) => void {
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
 * Bodies up to this size are gzipped on the event loop: at level 1 that takes about 50 µs for a
 * reverse page of 22 to 35 KB, where handing it to the thread pool cost 120 to 150 µs of CPU and
 * as much again in wall time (a zlib stream set up per call, a thread woken and the loop woken
 * back). 64 KiB deflate in about 0.1 ms; larger bodies (a job's results page, an OpenAPI document)
 * still go to the pool, so no response holds the loop for long.
 */
const SYNC_GZIP_MAX_BYTES = 64 * 1024;

/**
 * Response bodies gzipped by zlib itself on Node: its CompressionStream is the same zlib behind Web
 * streams that cost as much CPU again as the deflate. At level 1 rather than the default 6: a
 * reverse page of 34 KB deflates in 0.25 ms instead of 0.69 ms (on the page's critical path) into
 * 5.1 KB instead of 4.8 KB. Deno and Bun keep their own CompressionStream.
 */
function runtimeGzip(): Gzip | undefined {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Deno || g.Bun) return undefined;
  return async (bytes) =>
    bytes.byteLength <= SYNC_GZIP_MAX_BYTES
      ? (gzipSync(bytes, { level: 1 }) as Uint8Array<ArrayBuffer>)
      : await new Promise((resolve, reject) => gzip(bytes, { level: 1 }, (err, out) => (err ? reject(err) : resolve(out as Uint8Array<ArrayBuffer>))));
}
