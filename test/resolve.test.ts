// npm run resolve end to end: the command-line client against a started server whose in-process
// worker runs the job, reading a CSV or a plain list and writing CSV or NDJSON.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { openTestDatabase, type TestDatabase } from "./support/db.ts";
import { createCustomer, type Clock } from "./support/server.ts";
import { loadFixtures, W } from "./support/fixtures.ts";
import { freePort } from "./support/ports.ts";
import { liveFarcaster, startJobBench, unknown, type JobBench } from "./jobs/support.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const realClock: Clock = { now: () => new Date(), set() {}, advance() {} };

let database: TestDatabase & { close(): Promise<void> };
let bench: JobBench;
let apiKey: string;
let dir: string;

before(async () => {
  database = await openTestDatabase("pglite");
  await loadFixtures(database.db, new Date());
  bench = await startJobBench(database.db, realClock);
  bench.worker.start();
  ({ apiKey } = await createCustomer(database.db, { packs: [{ pack: "Agent", quantity: 10 }], now: new Date() }));
  dir = mkdtempSync(join(tmpdir(), "walletid-resolve-"));
});
after(async () => {
  await bench.close();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

function resolve(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/resolve.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, WALLETID_API_KEY: apiKey, WALLETID_URL: bench.server.url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  return new Promise((r) => child.once("exit", (code) => r({ code, stdout, stderr })));
}

test("a CSV list in, progress while the job runs, a CSV of results out", { timeout: 60_000 }, async () => {
  const wallets = [W.full, ...Array.from({ length: 12 }, (_, i) => liveFarcaster(3000 + i)), unknown(3000), W.ensOnly];
  const input = join(dir, "list.csv");
  writeFileSync(input, ["name,wallet", ...wallets.map((w, i) => `row ${i},${w}`), `dup,${W.full.toUpperCase().replace("0X", "0x")}`].join("\n"));
  const out = join(dir, "results.csv");
  const run = await resolve([input, "--out", out, "--interval", "0.1"]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /Read 16 addresses \(15 distinct\)/);
  assert.match(run.stderr, /Credits available: 120/);
  // 2 in the index (one billable), 13 never seen: high adds ceil(13 x 14.2%) = 2
  assert.match(run.stderr, /Estimate: 2 in the index, 0 checked empty, 13 never checked; would bill about 1 to 3 credits\./);
  assert.match(run.stderr, /Submitted job [0-9a-f-]{36} \(15 wallets\)/);
  assert.match(run.stderr, /progress 100% 15\/15 completed/, "plain progress lines when not a terminal");
  assert.match(run.stderr, /Done: 15 wallets, 14 found, 13 matched \(billed\); wrote .*results\.csv \(csv\)/);
  const lines = readFileSync(out, "utf8").trim().split("\n");
  assert.equal(lines[0], "wallet,found,ens_name,twitter,twitter_verified,twitter_reachability,farcaster,farcaster_fid,farcaster_followers,lens,github,sources");
  assert.equal(lines.length, 16);
  assert.equal(lines[1], `${W.full},true,alice.eth,alice,true,live,alice,3,100,,,onchain farcaster attested-social`);
  assert.equal(lines[2], `${liveFarcaster(3000)},true,,livex3000,true,,live3000,4000,3000,,,farcaster`);
  assert.equal(lines[14], `${unknown(3000)},false,,,,,,,,,,`);
});

test("a plain list in, NDJSON out; a malformed line stops before anything is submitted", { timeout: 60_000 }, async () => {
  const input = join(dir, "list.txt");
  writeFileSync(input, `${W.ensOnly}\n\n${unknown(3100)}\n`);
  const out = join(dir, "results.ndjson");
  const run = await resolve([input, "--out", out, "--interval", "0.1"]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /Estimate: skipped/);
  const rows = readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(rows[1], { wallet: unknown(3100), found: false });
  assert.equal(rows[0].ens_name, "eve.eth");
  assert.equal(rows[0].found, true);

  writeFileSync(input, `${W.ensOnly}\n0x1234\n`);
  const bad = await resolve([input]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /1 malformed address .*line 2: "0x1234"/);
  assert.doesNotMatch(bad.stderr, /Submitted/);
});

test("on a terminal the progress is a bar redrawn in place", { timeout: 60_000 }, async () => {
  const input = join(dir, "tty.txt");
  writeFileSync(input, Array.from({ length: 12 }, (_, i) => liveFarcaster(3200 + i)).join("\n"));
  const out = join(dir, "tty.csv");
  // script(1) gives the client a pseudo-terminal, as a user's shell would
  const command = `${process.execPath} --import tsx scripts/resolve.ts ${input} --out ${out} --interval 0.1`;
  const child = spawn("script", ["-qec", command, "/dev/null"], {
    cwd: ROOT,
    env: { ...process.env, WALLETID_API_KEY: apiKey, WALLETID_URL: bench.server.url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let terminal = "";
  child.stdout.on("data", (c: Buffer) => (terminal += c.toString()));
  const code = await new Promise((r) => child.once("exit", r));
  assert.equal(code, 0, terminal);
  assert.match(terminal, /\r\[#{30}\] 100% 12\/12 completed/);
  assert.doesNotMatch(terminal, /^progress /m, "no plain progress lines on a terminal");
  assert.equal(readFileSync(out, "utf8").trim().split("\n").length, 13);
});

test("--help: the usage on stdout, exit 0, nothing read or sent", async () => {
  const run = await resolve(["--help"]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^Usage: WALLETID_API_KEY=\.\.\. npm run resolve -- FILE \[options\]/);
  for (const option of ["--dry-run", "--yes", "--confirm-above", "--out", "--format", "--column", "--url", "--interval"]) assert.ok(run.stdout.includes(option), option);
});

async function jobCount(): Promise<number> {
  return (await database.db.query<{ n: number }>("SELECT count(*)::integer AS n FROM jobs"))[0].n;
}

test("--dry-run prints the free estimate and submits nothing", { timeout: 60_000 }, async () => {
  const input = join(dir, "dry.txt");
  writeFileSync(input, Array.from({ length: 12 }, (_, i) => liveFarcaster(3400 + i)).join("\n"));
  const before = await jobCount();
  const run = await resolve([input, "--dry-run"]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /Estimate: .* would bill about \d+ to \d+ credits\./);
  assert.match(run.stderr, /Dry run: nothing submitted, nothing billed\./);
  assert.doesNotMatch(run.stderr, /Submitted/);
  assert.equal(run.stdout, "");
  assert.equal(await jobCount(), before);
});

test("a job that may bill more than --confirm-above is not submitted without --yes when there is no terminal to ask", { timeout: 60_000 }, async () => {
  const input = join(dir, "confirm.txt");
  writeFileSync(input, Array.from({ length: 6 }, (_, i) => liveFarcaster(3500 + i)).join("\n"));
  const before = await jobCount();
  const refused = await resolve([input, "--confirm-above", "3"]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /The job may bill up to 6 credits \(over --confirm-above 3\)\. Not submitted: pass --yes/);
  assert.equal(await jobCount(), before);
  const agreed = await resolve([input, "--confirm-above", "3", "--yes", "--format", "ndjson", "--interval", "0.1"]);
  assert.equal(agreed.code, 0, agreed.stderr);
  assert.match(agreed.stderr, /Submitted job/);
  assert.equal(agreed.stdout.trim().split("\n").length, 6);
});

test("an unreachable service is named in one line, never a stack", { timeout: 60_000 }, async () => {
  const input = join(dir, "nowhere.txt");
  writeFileSync(input, `${W.ensOnly}\n`);
  const port = await freePort(); // nothing listens there
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/resolve.ts", input], {
    cwd: ROOT,
    env: { ...process.env, WALLETID_API_KEY: apiKey, WALLETID_URL: `http://127.0.0.1:${port}` },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise((r) => child.once("exit", r));
  assert.equal(code, 1);
  const lines = stderr.split("\n").filter((l) => l && !l.startsWith("Read "));
  assert.equal(lines.length, 1, stderr);
  assert.match(lines[0], new RegExp(`^Cannot reach http://127\\.0\\.0\\.1:${port}: ECONNREFUSED`));
  assert.doesNotMatch(stderr, /\n\s+at /);
});

test("a reader that stops early (| head -1) ends the client quietly with exit 0", { timeout: 120_000 }, async () => {
  const input = join(dir, "many.txt");
  writeFileSync(input, Array.from({ length: 300 }, (_, i) => unknown(3600 + i)).join("\n"));
  const command = `${process.execPath} --import tsx scripts/resolve.ts ${input} --format ndjson --interval 0.1 --yes | head -1; echo "status=\${PIPESTATUS[0]}"`;
  const child = spawn("bash", ["-c", command], {
    cwd: ROOT,
    env: { ...process.env, WALLETID_API_KEY: apiKey, WALLETID_URL: bench.server.url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  await new Promise((r) => child.once("exit", r));
  const [first, status] = stdout.trim().split("\n");
  assert.equal(JSON.parse(first).found, false);
  assert.equal(status, "status=0", stderr);
  assert.doesNotMatch(stderr, /EPIPE|\n\s+at /);
});
