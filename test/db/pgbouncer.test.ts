// The service behind PgBouncer 1.18 in transaction mode (no prepared statements, no session
// state between transactions), on PostgreSQL: the admin commands, a server's lookup, keyed batch
// and job (its worker listening on DATABASE_DIRECT_URL), and a server whose worker polls without one.
// Skipped with a message where /usr/sbin/pgbouncer is missing; under CI=1 that is a failure.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import postgres from "postgres";
import { createPostgresDatabase } from "../support/db.ts";
import { address, expectStatus } from "../support/http.ts";
import { PGBOUNCER, PGBOUNCER_INSTALL, startPgbouncer, type Pgbouncer } from "../support/pgbouncer.ts";
import { ROOT, serverNodeFlags, startProcess, workerArgs, type Running } from "../support/process.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function available(t: { skip: (message: string) => void }): boolean {
  if (existsSync(PGBOUNCER)) return true;
  const message = `PgBouncer not found at ${PGBOUNCER}: ${PGBOUNCER_INSTALL}`;
  if (process.env.CI) assert.fail(message);
  console.error(`\n*** SKIPPED the PgBouncer tests. ${message} ***\n`);
  t.skip(message);
  return false;
}

function admin(databaseUrl: string, ...args: string[]): any {
  const run = spawnSync(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, DATABASE_POOLER: "" },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(run.status, 0, `admin ${args.join(" ")}: ${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout);
}

let created: { url: string; drop: () => Promise<void> } | undefined;
let bouncer: Pgbouncer | undefined;
let direct: postgres.Sql | undefined;
const running: Array<{ stop: () => Promise<void> }> = [];
const files = mkdtempSync(join(tmpdir(), "walletid-pgbouncer-test-"));

before(async () => {
  if (!existsSync(PGBOUNCER)) return;
  created = await createPostgresDatabase();
  bouncer = await startPgbouncer(created.url);
  direct = postgres(created.url, { max: 1, onnotice: () => {} });
});
after(async () => {
  for (const r of running.reverse()) await r.stop();
  await direct?.end();
  await bouncer?.stop();
  await created?.drop();
  rmSync(files, { recursive: true, force: true });
});

// 40 wallets with a handle each (billed), the rest unknown
const WALLETS = Array.from({ length: 40 }, (_, i) => address(i + 1, "b0"));
let apiKey = "";

test("admin commands run through PgBouncer in transaction mode (detected), and keep the settings as the role's defaults", { timeout: 120_000 }, async (t) => {
  if (!available(t)) return;
  const url = bouncer!.url;
  const { account_id } = admin(url, "account", "create");
  assert.match(account_id, /^[0-9a-f-]{36}$/);
  apiKey = admin(url, "key", "create", "--account", account_id, "--name", "pooled").api_key;
  assert.match(apiKey, /^wid_live_/);
  const balance = admin(url, "credits", "grant", "--account", account_id, "--pack", "Scale");
  assert.ok(JSON.stringify(balance).includes("25000"), JSON.stringify(balance));
  const observed = new Date(Date.now() - 86_400_000).toISOString();
  const lines = WALLETS.map((w, i) => JSON.stringify({ wallet: w, kind: "twitter", route: "x-signin", handle: `pooled${i}`, observed_at: observed }));
  writeFileSync(join(files, "index.ndjson"), lines.join("\n") + "\n");
  const counts = admin(url, "import", join(files, "index.ndjson"));
  assert.ok(JSON.stringify(counts).includes("40"), JSON.stringify(counts));

  // a connection PostgreSQL opens now (as the pooler will) gets the service's settings unasked
  const [settings] = await direct!`SELECT current_setting('statement_timeout') AS st, current_setting('plan_cache_mode') AS pcm,
    current_setting('jit') AS jit, current_setting('TimeZone') AS tz`;
  assert.deepEqual({ ...settings }, { st: "3s", pcm: "force_generic_plan", jit: "off", tz: "UTC" });
  // beyond the detecting probe (one refused startup a command), nothing refused by the pooler
  assert.doesNotMatch(bouncer!.log(), /prepared statement|server conn crashed|protocol error/i, bouncer!.log());
  assert.equal(bouncer!.log().match(/pooler error: unsupported startup parameter/g)?.length, 4, bouncer!.log());
});

async function startServer(env: Record<string, string>): Promise<Running> {
  const server = await startProcess(process.execPath, [...serverNodeFlags(), "--import", "tsx", "src/main.ts"], {
    DATABASE_URL: bouncer!.url,
    MAINTENANCE_AT: "off",
    LOG_LEVEL: "info",
    ...env,
  });
  running.push(server);
  return server;
}

function startWorker(env: Record<string, string>) {
  const child = spawn(process.execPath, workerArgs(), { cwd: ROOT, env: { ...process.env, LOG_LEVEL: "info", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c));
  child.stderr!.on("data", (c: Buffer) => (output += c));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const handle = {
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
  running.push(handle);
  return handle;
}

async function jobCompletes(server: Running, wallets: string[]): Promise<{ id: string; matched: number; text: string }> {
  const headers = { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" };
  const submitted = await expectStatus(await fetch(`${server.url}/api/v1/jobs`, { method: "POST", headers, body: JSON.stringify({ wallets }) }), 202, "submit");
  const id = submitted.body.data.job_id ?? submitted.body.data.id;
  const started = Date.now();
  for (;;) {
    const polled = await expectStatus(await fetch(`${server.url}/api/v1/jobs/${id}`, { headers }), 200, "poll");
    if (polled.body.data.status === "completed") return { id, matched: polled.body.meta.matched, text: polled.text };
    assert.notEqual(polled.body.data.status, "failed", polled.text);
    assert.ok(Date.now() - started < 60_000, `the job did not complete within 60 s: ${polled.text}`);
    await sleep(50);
  }
}

test("a server's lookup, keyed batch and job run through PgBouncer; the worker listens on DATABASE_DIRECT_URL", { timeout: 180_000 }, async (t) => {
  if (!available(t) || !apiKey) return;
  const server = await startServer({ WORKER: "0" });
  const worker = startWorker({ DATABASE_URL: bouncer!.url, DATABASE_DIRECT_URL: created!.url });
  const auth = { Authorization: `Bearer ${apiKey}` };

  const one = await expectStatus(await fetch(`${server.url}/api/v1/wallet/${WALLETS[0]}`, { headers: auth }), 200, "lookup");
  assert.equal(one.body.data.twitter.handle, "pooled0");

  const body = JSON.stringify({ wallets: [...WALLETS.slice(0, 10), address(1, "c0")] });
  const keyed = { ...auth, "Content-Type": "application/json", "Idempotency-Key": "pooled-batch-1" };
  const first = await expectStatus(await fetch(`${server.url}/api/v1/batch`, { method: "POST", headers: keyed, body }), 200, "batch");
  assert.equal(first.body.meta.matched, 10);
  const again = await expectStatus(await fetch(`${server.url}/api/v1/batch`, { method: "POST", headers: keyed, body }), 200, "replay");
  assert.equal(again.headers.get("Idempotent-Replayed"), "true");
  assert.equal(again.text, first.text);

  // the worker's LISTEN is on PostgreSQL itself: a job starts without waiting for a poll
  const deadline = Date.now() + 30_000;
  while ((await direct!`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'walletid listener' AND query ILIKE 'listen%'`).length === 0) {
    assert.ok(Date.now() < deadline, `no listener on the direct connection: ${worker.output()}`);
    await sleep(100);
  }
  const job = await jobCompletes(server, WALLETS.slice(10, 30));
  assert.equal(job.matched, 20, `${job.text}\n${worker.output()}`);

  const debits = await direct!`SELECT call_key, matches FROM debits ORDER BY created_at`;
  const byKind = debits.map((d) => [String(d.call_key).replace(/^(batch-idem:pooled-batch-1)@.*$/, "$1").replace(/^(call|meter):.*$/, "single"), d.matches]);
  assert.deepEqual(byKind, [["single", 1], ["batch-idem:pooled-batch-1", 10], [`job:${job.id}`, 20]]);
  assert.doesNotMatch(server.output() + worker.output(), /prepared statement|unsupported startup parameter|"level":"error"/i);
});

test("without DATABASE_DIRECT_URL a server's own worker polls, and its jobs complete", { timeout: 120_000 }, async (t) => {
  if (!available(t) || !apiKey) return;
  for (const r of running.splice(0).reverse()) await r.stop();
  const server = await startServer({ WORKER: "1" });
  // more than the ten a submission runs inline: the worker runs it
  const job = await jobCompletes(server, [...WALLETS.slice(30, 40), ...Array.from({ length: 5 }, (_, i) => address(i + 1, "c1"))]);
  assert.equal(job.matched, 10, `${job.text}\n${server.output()}`);
  const listening = await direct!`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'listen%'`;
  assert.equal(listening.length, 0, "nothing listens through the pooler");
  assert.doesNotMatch(server.output(), /prepared statement|unsupported startup parameter|"level":"error"/i);
});
