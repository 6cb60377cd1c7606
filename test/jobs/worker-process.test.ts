// `npm run worker` (the bundled worker, with its heap cap) as real processes on PostgreSQL: one
// is killed (SIGKILL) in the middle of a job, another takes the job over when the lease expires,
// resumes from the checkpoint, and the account is debited exactly once; a job whose workers are
// killed ten times, each after some progress, still completes; without DATABASE_URL it says why.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { createJob } from "../../src/jobs/submit.ts";
import { readCredits } from "../../src/ledger/accounts.ts";
import { openTestDatabase, type TestDatabase } from "../support/db.ts";
import { workerArgs } from "../support/process.ts";
import { createCustomer } from "../support/server.ts";
import { debitsOf } from "../support/http.ts";
import { startFakeNeynar, type FakeUpstream } from "../support/upstreams.ts";
import { farcasterUserOf, liveFarcaster } from "./support.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function startWorkerProcess(env: Record<string, string>) {
  const child = spawn(process.execPath, workerArgs(), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // log lines (JSON on stdout) and anything else
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return { child, exited, output: () => output };
}

let database: TestDatabase & { close(): Promise<void> };
let neynar: FakeUpstream;

before(async () => {
  database = await openTestDatabase("postgres");
  neynar = await startFakeNeynar(farcasterUserOf);
  neynar.behave({ delayMs: 40 });
});
after(async () => {
  await neynar.close();
  await database.close();
});

test("npm run worker builds its bundle and starts; without DATABASE_URL it stops with one line", { timeout: 60_000 }, async () => {
  assert.deepEqual(workerArgs().slice(0, 1), ["--max-old-space-size=64"], "the heap is capped");
  assert.ok(workerArgs().includes("--min-semi-space-size=16"), "the young generation keeps its size, as the server's does");
  const { DATABASE_URL: _, ...env } = process.env;
  const child = spawn(process.execPath, workerArgs(), { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  assert.equal(code, 1, output);
  assert.match(output, /^Cannot start a worker without DATABASE_URL/m);
});

test("a worker killed mid-job is resumed by another from its checkpoint, billed exactly once [postgres]", { timeout: 120_000 }, async () => {
  const { db, url } = database;
  const now = new Date();
  const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 100 }], now });
  const wallets = Array.from({ length: 600 }, (_, i) => liveFarcaster(9000 + i));
  const created = await createJob(db, { accountId: customer.accountId, keyId: customer.keyId, wallets, now });
  assert.ok(created.ok);
  const env = { DATABASE_URL: url!, NEYNAR_API_URL: neynar.url, JOB_CHUNK_SIZE: "50", JOB_LEASE_SECONDS: "2", LOG_LEVEL: "info" };
  const progress = async () =>
    (await db.query<{ status: string; processed: number; attempts: number }>("SELECT status, processed, attempts FROM jobs WHERE id = $1", [created.jobId]))[0];

  const first = startWorkerProcess(env);
  const deadline = Date.now() + 60_000;
  while ((await progress()).processed < 100) {
    assert.ok(Date.now() < deadline, `no checkpoint within 60 s: ${first.output()}`);
    await sleep(20);
  }
  first.child.kill("SIGKILL");
  await first.exited;
  const atKill = await progress();
  assert.equal(atKill.status, "processing");
  assert.ok(atKill.processed < 600, "killed before the end");

  const second = startWorkerProcess(env);
  try {
    while ((await progress()).status !== "completed") {
      assert.ok(Date.now() < deadline + 30_000, `not completed: ${second.output()}`);
      await sleep(50);
    }
  } finally {
    second.child.kill("SIGTERM");
    await second.exited;
  }
  assert.match(second.output(), new RegExp(`job ${created.jobId}: resuming at ${atKill.processed}/600`));
  assert.equal((await progress()).attempts, 2);

  // wallets before the checkpoint were asked once: the second worker did not start over
  const asked = neynar.asked.flat();
  for (const w of wallets.slice(0, atKill.processed)) assert.equal(asked.filter((a) => a === w).length, 1, w);
  for (const w of wallets) assert.ok(asked.includes(w), w);

  const debits = await debitsOf(db, customer.accountId);
  assert.deepEqual(debits.map((d) => [d.call_key, d.matches]), [[`job:${created.jobId}`, 600]]);
  const [job] = await db.query<{ matched: number }>("SELECT matched FROM jobs WHERE id = $1", [created.jobId]);
  assert.equal(job.matched, 600);
  assert.equal((await readCredits(db, customer.accountId, new Date())).available, 1200 - 600);
});

test("a 5,000-address job whose worker is killed 10 times, each after a checkpoint, completes billed once [postgres]", { timeout: 300_000 }, async () => {
  const { db, url } = database;
  const now = new Date();
  const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 500 }], now });
  const wallets = Array.from({ length: 5000 }, (_, i) => liveFarcaster(20_000 + i));
  const created = await createJob(db, { accountId: customer.accountId, keyId: customer.keyId, wallets, now });
  assert.ok(created.ok);
  const env = { DATABASE_URL: url!, NEYNAR_API_URL: neynar.url, JOB_CHUNK_SIZE: "100", JOB_LEASE_SECONDS: "1", LOG_LEVEL: "info" };
  const progress = async () =>
    (await db.query<{ status: string; processed: number; attempts: number }>("SELECT status, processed, attempts FROM jobs WHERE id = $1", [created.jobId]))[0];

  const deadline = Date.now() + 240_000;
  let seen = 0;
  for (let kill = 1; kill <= 10; kill++) {
    const worker = startWorkerProcess(env);
    // killed as soon as it has moved the checkpoint
    while ((await progress()).processed <= seen) {
      assert.ok(Date.now() < deadline, `kill ${kill}: no progress past ${seen}: ${worker.output()}`);
      assert.notEqual((await progress()).status, "failed", `kill ${kill}: the job was failed: ${worker.output()}`);
      await sleep(10);
    }
    worker.child.kill("SIGKILL");
    await worker.exited;
    const at = await progress();
    assert.equal(at.status, "processing", `kill ${kill}: ${JSON.stringify(at)}`);
    seen = at.processed;
  }
  assert.ok((await progress()).attempts >= 10);

  const last = startWorkerProcess(env);
  try {
    while ((await progress()).status === "processing") {
      assert.ok(Date.now() < deadline, `not finished: ${last.output()}`);
      await sleep(50);
    }
  } finally {
    last.child.kill("SIGTERM");
    await last.exited;
  }
  const final = await progress();
  assert.equal(final.status, "completed", last.output());
  assert.ok(final.attempts >= 11);
  const debits = await debitsOf(db, customer.accountId);
  assert.deepEqual(debits.map((d) => [d.call_key, d.matches]), [[`job:${created.jobId}`, 5000]]);
});
