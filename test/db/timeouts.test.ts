// The drivers' timeouts and failures, against real faults: PostgreSQL behind a proxy the test
// controls (refused, partitioned, reset, refusing startups, terminated, not accepting
// connections), and PGlite waiting behind long work. Every failure reaches its caller in
// bounded time, is classed unavailable, and the next statement after the fault works.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import postgres from "postgres";
import { DatabaseTimeoutError } from "../../src/db/deadline.ts";
import { isDatabaseUnavailable } from "../../src/db/errors.ts";
import { openDatabase } from "../../src/db/open.ts";
import { openPglite } from "../../src/db/pglite.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { DEADLINE_MARGIN_MS, DEFAULT_DB_TIMEOUTS, type Db, type DbTimeouts } from "../../src/db/types.ts";
import { ADMIN_URL, createPostgresDatabase } from "../support/db.ts";
import { W, loadFixtures } from "../support/fixtures.ts";
import { assertErrorBody, expectStatus } from "../support/http.ts";
import { createCustomer, startServer, type TestServer } from "../support/server.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";

const SHORT: DbTimeouts = { connectMs: 500, statementMs: 400, idleMs: 10_000 };
const DEADLINE = SHORT.statementMs + DEADLINE_MARGIN_MS;
/**
 * "At once" and "again at once": the acceptance figure is 1 s (the fault suite measures it on
 * a real server); these driver checks allow 2 s, as the machine running them may be loaded.
 */
const PROMPT_MS = 2000;

/** Runs `work`, expecting it to fail as unavailable within `withinMs`; returns the error. */
async function failsUnavailable(work: Promise<unknown>, withinMs: number, what: string): Promise<Error & { code?: string }> {
  const started = performance.now();
  const err = await work.then(
    () => assert.fail(`${what}: expected a failure`),
    (e: Error) => e,
  );
  const ms = performance.now() - started;
  assert.ok(isDatabaseUnavailable(err), `${what}: unavailable, got ${(err as { code?: string }).code}: ${err.message}`);
  assert.ok(ms < withinMs, `${what}: failed after ${Math.round(ms)} ms, within ${withinMs} ms expected`);
  return err;
}

/** The time until `db` answers SELECT 1 again, trying every 20 ms. */
async function timeToAnswer(db: Db, limitMs = 5000): Promise<number> {
  const started = performance.now();
  for (;;) {
    try {
      await db.query("SELECT 1");
      return performance.now() - started;
    } catch (err) {
      if (performance.now() - started > limitMs) throw err;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

describe("PostgreSQL behind a controlled proxy", () => {
  let created: { url: string; drop: () => Promise<void> };
  let name: string;
  let proxy: TcpProxy;
  let db: Db;
  let admin: postgres.Sql;

  before(async () => {
    created = await createPostgresDatabase();
    name = new URL(created.url).pathname.slice(1);
    const setup = await openDatabase({ databaseUrl: created.url, max: 1 });
    await setup.close();
    proxy = await startTcpProxy({ host: "127.0.0.1", port: Number(new URL(ADMIN_URL).port || 5432) }, name);
    db = openPostgres(proxy.url, { max: 2, timeouts: SHORT });
    admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  });
  after(async () => {
    await proxy?.setMode("pass");
    await db?.close();
    await admin?.end();
    await proxy?.close();
    await created?.drop();
  });

  /** Cuts the pool's connections and lets the driver see it, so the next statement connects anew. */
  async function closeConnections() {
    proxy.terminate();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  test("refused: the statement fails at once, and the next one after the return answers within 1 s", async () => {
    await db.query("SELECT 1");
    await proxy.setMode("refuse");
    await failsUnavailable(db.query("SELECT 1"), PROMPT_MS, "open connection cut");
    await failsUnavailable(db.query("SELECT 1"), PROMPT_MS, "new connection refused");
    await proxy.setMode("pass");
    assert.ok((await timeToAnswer(db)) < PROMPT_MS);
  });

  test("partitioned: statements and transactions fail at the client deadline; afterwards a fresh pool answers within 1 s", async () => {
    await db.query("SELECT 1");
    await proxy.setMode("blackhole");
    const err = await failsUnavailable(db.query("SELECT 1"), DEADLINE + 1000, "statement on a held connection");
    assert.ok(err instanceof DatabaseTimeoutError, err.message);
    await failsUnavailable(db.transaction((tx) => tx.query("SELECT 1")), DEADLINE + 1000, "transaction");
    await failsUnavailable(db.query("SELECT 1"), DEADLINE + 1000, "statement on a new connection");
    await proxy.setMode("pass");
    assert.ok((await timeToAnswer(db)) < PROMPT_MS);
  });

  test("connections reset: the statement fails at once; then it answers", async () => {
    await db.query("SELECT 1");
    await proxy.setMode("drop");
    await failsUnavailable(db.query("SELECT 1"), PROMPT_MS, "reset");
    await proxy.setMode("pass");
    assert.ok((await timeToAnswer(db)) < PROMPT_MS);
  });

  for (const [sqlstate, message] of [
    ["57P03", "the database system is starting up"],
    ["53300", "sorry, too many clients already"],
  ]) {
    test(`a server refusing startups with ${sqlstate} (${message}): unavailable`, async () => {
      proxy.failStartups(sqlstate, message);
      try {
        await closeConnections();
        // after earlier resets postgres.js may hold the first statement until the client deadline
        // (DATABASE_TIMEOUT, replacing the pool); the next one meets the refusal itself
        const first = await failsUnavailable(db.query("SELECT 1"), DEADLINE + PROMPT_MS, sqlstate);
        const err = first.code === sqlstate ? first : await failsUnavailable(db.query("SELECT 1"), PROMPT_MS, sqlstate);
        assert.equal(err.code, sqlstate);
      } finally {
        proxy.failStartups(undefined);
      }
      assert.ok((await timeToAnswer(db)) < PROMPT_MS);
    });
  }

  test("55000: the database is not accepting connections (ALLOW_CONNECTIONS false, this test's own database)", async () => {
    await admin.unsafe(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
    try {
      await closeConnections();
      const first = await failsUnavailable(db.query("SELECT 1"), DEADLINE + PROMPT_MS, "55000");
      const err = first.code === "55000" ? first : await failsUnavailable(db.query("SELECT 1"), PROMPT_MS, "55000");
      assert.equal(err.code, "55000");
    } finally {
      await admin.unsafe(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    }
    assert.ok((await timeToAnswer(db)) < PROMPT_MS);
  });

  test("57P01: pg_terminate_backend during a statement fails it; the next statement answers", async () => {
    await db.query("SELECT 1");
    const running = db.query("SELECT pg_sleep(0.3)");
    // it may fail before the termination's own answer arrives: handled from the start, checked below
    running.catch(() => {});
    // terminated while it runs: polled for, not waited for a fixed time (on a loaded machine a fixed
    // wait plus the admin's own statement once outlasted the sleep, and the idle connection was cut)
    for (let tries = 0; tries < 200; tries++) {
      const hit = await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                               WHERE datname = ${name} AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE 'SELECT pg_sleep%'`;
      if (hit.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const err = await failsUnavailable(running, PROMPT_MS, "terminated");
    assert.ok(["57P01", "CONNECTION_CLOSED", "ECONNRESET"].includes(err.code ?? ""), `${err.code}: ${err.message}`);
    assert.ok((await timeToAnswer(db)) < PROMPT_MS);
  });

  test("statement_timeout: a statement longer than DB_STATEMENT_TIMEOUT_MS is cancelled by the server (57014)", async () => {
    const err = await failsUnavailable(db.query("SELECT pg_sleep(2)"), DEADLINE, "statement timeout");
    assert.equal(err.code, "57014");
  });

  test("bulk transactions (migrations, imports, the stats count) run past both limits", async () => {
    const [row] = await db.transaction((tx) => tx.query<{ ok: number }>("SELECT 1 AS ok FROM pg_sleep($1::float8)", [DEADLINE / 1000 + 0.2]), {
      bulk: true,
    });
    assert.equal(row.ok, 1);
  });
});

describe("PGlite: the client deadline", () => {
  test("a statement waiting behind long work fails at the deadline; a transaction too, and its body never runs late", async () => {
    const db = await openPglite(undefined, SHORT);
    try {
      const long = db.transaction(async (tx) => {
        await tx.query("SELECT 1");
        await new Promise((resolve) => setTimeout(resolve, 2 * DEADLINE + 1500));
      }, { bulk: true });
      const err = await failsUnavailable(db.query("SELECT 1"), DEADLINE + 500, "statement");
      assert.ok(err instanceof DatabaseTimeoutError);
      let ran = false;
      await failsUnavailable(db.transaction(async (tx) => ((ran = true), tx.query("SELECT 1"))), DEADLINE + 500, "transaction");
      await long;
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(ran, false, "the transaction that timed out never ran");
      await db.query("SELECT 1");
    } finally {
      await db.close();
    }
  });
});

describe("HTTP with the default timeouts: 503 with Retry-After within 5 s of the database going away, 200 within 1 s of its return", () => {
  let created: { url: string; drop: () => Promise<void> };
  let proxy: TcpProxy;
  let db: Db;
  let server: TestServer;
  let key: string;

  before(async () => {
    created = await createPostgresDatabase();
    const setup = await openDatabase({ databaseUrl: created.url, max: 1 });
    await loadFixtures(setup, new Date());
    key = (await createCustomer(setup, { packs: [{ pack: "Index" }], now: new Date() })).apiKey;
    await setup.close();
    proxy = await startTcpProxy({ host: "127.0.0.1", port: Number(new URL(ADMIN_URL).port || 5432) }, new URL(created.url).pathname.slice(1));
    db = await openDatabase({ databaseUrl: proxy.url, max: 4, timeouts: DEFAULT_DB_TIMEOUTS });
    server = await startServer(db, { app: { now: () => new Date() } });
  });
  after(async () => {
    await proxy?.setMode("pass");
    await server?.close();
    await db?.close();
    await proxy?.close();
    await created?.drop();
  });

  for (const mode of ["refuse", "blackhole", "drop"] as const) {
    test(mode, async () => {
      const paths = [`/api/v1/wallet/${W.full}`, "/api/v1/reverse/twitter/alice"];
      for (const path of paths) await expectStatus(await server.request(path, { key }), 200, path);
      await proxy.setMode(mode);
      try {
        for (const path of paths) {
          const started = performance.now();
          const res = await expectStatus(await server.request(path, { key }), 503, `${path} (${mode})`);
          const ms = performance.now() - started;
          assertErrorBody(res, "SERVICE_UNAVAILABLE");
          assert.match(res.headers.get("Retry-After") ?? "", /^[1-9]\d*$/);
          assert.ok(ms < 5000, `${path} answered in ${Math.round(ms)} ms`);
        }
      } finally {
        await proxy.setMode("pass");
      }
      const started = performance.now();
      for (;;) {
        const res = await server.request(paths[0], { key });
        await res.text();
        if (res.status === 200) break;
        assert.ok(performance.now() - started < 1000, `serves again within 1 s (still ${res.status})`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
  }
});
