// A real listening server around createApp, with an injected clock, for HTTP tests.
import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import { createApp, type App, type AppDeps } from "../../src/app.ts";
import { useBodySource } from "../../src/http/body.ts";
import { readNodeBody, rememberIncoming } from "../../src/node-body.ts";
import { readConfig, type Config } from "../../src/config.ts";
import type { Db } from "../../src/db/types.ts";
import { createAccount, grantCredits, type PackName } from "../../src/ledger/accounts.ts";
import { createApiKey } from "../../src/ledger/keys.ts";
import { after, before } from "node:test";
import { loadFixtures } from "./fixtures.ts";
import { freePort } from "./ports.ts";
import { openDatabase } from "../../src/db/open.ts";

export interface Clock {
  now: () => Date;
  set(at: Date | string): void;
  advance(ms: number): void;
}

export function createClock(start: Date | string = "2026-11-20T12:00:30Z"): Clock {
  let t = new Date(start).getTime();
  return {
    now: () => new Date(t),
    set: (at) => {
      t = new Date(at).getTime();
    },
    advance: (ms) => {
      t += ms;
    },
  };
}

export interface TestServer {
  url: string;
  app: App;
  clock: Clock;
  config: Config;
  /** fetch against the server; `path` starts with / */
  request(path: string, init?: RequestInit & { key?: string }): Promise<Response>;
  close(): Promise<void>;
}

export async function startServer(
  db: Db,
  options: { clock?: Clock; env?: Record<string, string>; app?: Partial<AppDeps>; selfUrl?: boolean } = {},
): Promise<TestServer> {
  const clock = options.clock ?? createClock();
  // selfUrl: PUBLIC_URL is the server's own address (OAuth issuers must be the URL clients use)
  const port = options.selfUrl ? await freePort() : 0;
  const config = readConfig({ STALE_AFTER_DAYS: "30", ...(options.selfUrl ? { PUBLIC_URL: `http://127.0.0.1:${port}` } : {}), ...options.env });
  const logs: string[] = [];
  const app = createApp({
    db,
    config,
    now: clock.now,
    log: (line) => { logs.push(line); if (process.env.TEST_LOG) console.error(line); },
    // @hono/node-server hands {incoming} as the second fetch argument, as in src/main.ts
    peerAddress: (_req, env) => (env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress,
    ...options.app,
  });
  // bodies are read as src/main.ts reads them on Node: from the IncomingMessage
  useBodySource(readNodeBody);
  const server = serve({ fetch: (req, env) => (rememberIncoming(req, env), app.fetch(req, env)), port, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    app,
    clock,
    config,
    request(path, init = {}) {
      const headers = new Headers(init.headers);
      if (init.key) headers.set("Authorization", `Bearer ${init.key}`);
      return fetch(url + path, { ...init, headers });
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.close();
    },
  };
}

/** An account with a key and, optionally, packs granted. */
export async function createCustomer(
  db: Db,
  options: { email?: string; hasAccount?: boolean; packs?: Array<{ pack: PackName; quantity?: number; at?: Date }>; now: Date },
): Promise<{ accountId: string; apiKey: string; keyId: string }> {
  const { accountId } = await createAccount(db, { email: options.email, hasAccount: options.hasAccount, now: options.now });
  for (const [i, p] of (options.packs ?? []).entries()) {
    await grantCredits(db, {
      accountId,
      pack: p.pack,
      quantity: p.quantity ?? 1,
      grantKey: `test-${i}-${crypto.randomUUID()}`,
      now: p.at ?? options.now,
    });
  }
  const key = await createApiKey(db, { accountId, name: "test", now: options.now });
  if (!key.ok) throw new Error(`Cannot create a test key: ${key.code}`);
  return { accountId, apiKey: key.apiKey, keyId: key.keyId };
}

/** Reads a JSON body, failing with the status and raw body when it is not JSON. */
export async function json(res: Response): Promise<any> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`Expected JSON, got ${res.status}: ${text.slice(0, 500)}`);
  }
}

export interface FixtureSuite {
  clock: Clock;
  server: TestServer;
  key: string;
  accountId: string;
  /** Moves the clock to a fresh minute, so the minute window of earlier tests never interferes. */
  nextMinute(): void;
}

/**
 * The usual HTTP suite, as hooks of the calling describe: the fixture index (plus `load`), one
 * customer with `packs` (default 10 Agent packs) and a real server on an injected clock.
 */
export function fixtureSuite(
  get: () => { db: Db },
  options: { packs?: Array<{ pack: PackName; quantity?: number }>; load?: (db: Db, now: Date) => Promise<void> } = {},
): FixtureSuite {
  const clock = createClock("2026-11-20T12:00:30Z");
  const suite = { clock, key: "", accountId: "", nextMinute: () => clock.advance(60_000) } as FixtureSuite;
  before(async () => {
    const { db } = get();
    await loadFixtures(db, clock.now());
    await options.load?.(db, clock.now());
    const customer = await createCustomer(db, { packs: options.packs ?? [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    suite.key = customer.apiKey;
    suite.accountId = customer.accountId;
    suite.server = await startServer(db, { clock });
  });
  after(() => suite.server.close());
  return suite;
}

/**
 * The servers of a suite that meters across processes: one on the test database and, on
 * PostgreSQL, a second one with its own pool on the same database (another process's worth).
 * Call inside a describe; `prepare` fills the database first. `servers` is filled once started.
 */
export function serverPair(get: () => { db: Db; url?: string }, clock: Clock, prepare: (db: Db) => Promise<unknown>): TestServer[] {
  const servers: TestServer[] = [];
  let second: Db | undefined;
  before(async () => {
    const { db, url } = get();
    await prepare(db);
    servers.push(await startServer(db, { clock }));
    if (url) {
      second = await openDatabase({ databaseUrl: url, max: 4 });
      servers.push(await startServer(second, { clock }));
    }
  });
  after(async () => {
    for (const s of servers) await s.close();
    await second?.close();
  });
  return servers;
}
