// The admin CLI as an operator runs it: a real process against PostgreSQL and against an
// embedded data directory, JSON on stdout, one line on stderr and a non-zero exit on bad input.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createPostgresDatabase } from "./support/db.ts";
import { openDatabase } from "../src/db/open.ts";
import type { Db } from "../src/db/types.ts";
import { createApiKey } from "../src/ledger/keys.ts";
import { acquireDataDirLock } from "../src/db/datadir-lock.ts";
import { parseCommand, UsageError } from "../scripts/admin.ts";
import { importObservations } from "../src/index/import.ts";
import { FAKE_X_TOKEN, startFakeX } from "./support/fake-x.ts";
import { registerClient } from "../src/oauth/clients.ts";
import type { OAuthDeps } from "../src/oauth/deps.ts";
import { exchangeCode, issueCode, verifyAccessToken } from "../src/oauth/grants.ts";
import { pkceChallenge } from "../src/oauth/secrets.ts";

const REPO = new URL("..", import.meta.url).pathname;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function admin(args: string[], env: Record<string, string>, input?: string): Promise<Run> {
  const base = { ...process.env };
  delete base.DATABASE_URL;
  delete base.DATA_DIR;
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args], {
    cwd: REPO,
    env: { ...base, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stderr.on("data", (chunk) => (stderr += chunk));
  child.stdin.end(input ?? "");
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

function json(run: Run): Record<string, unknown> {
  assert.equal(run.code, 0, `exit ${run.code}, stderr: ${run.stderr}`);
  assert.equal(run.stderr, "");
  return JSON.parse(run.stdout);
}

/** Exactly one line on stderr, nothing on stdout, the given exit code. */
function refused(run: Run, code: number, message: string | RegExp): void {
  assert.equal(run.code, code, `stdout: ${run.stdout} stderr: ${run.stderr}`);
  assert.equal(run.stdout, "");
  assert.match(run.stderr, /^[^\n]+\n$/, `not one line: ${JSON.stringify(run.stderr)}`);
  if (typeof message === "string") assert.equal(run.stderr, `${message}\n`);
  else assert.match(run.stderr, message);
}

const WALLET = "0x00000000000000000000000000000000000a11ce";
const IMPORT = [
  { wallet: WALLET.toUpperCase().replace("0X", "0x"), kind: "twitter", route: "x-signin", handle: "@Alice", observed_at: "2025-05-01T00:00:00Z" },
  { wallet: WALLET, kind: "farcaster", route: "farcaster-verification", fid: 99, username: "alice", followers: 3, observed_at: "2025-05-01T00:00:00Z" },
  { kind: "reachability", handle: "alice", reachability: "live", checked_at: "2025-05-02T00:00:00Z" },
].map((line) => JSON.stringify(line)).join("\n") + "\n";

describe("admin command line parsing", () => {
  const missing = "00000000-0000-4000-8000-000000000000";
  test("reads every command and its options", () => {
    assert.deepEqual(parseCommand(["account", "create"]), { name: "account create", email: undefined });
    assert.deepEqual(parseCommand(["account", "create", "--email=Ops@Example.com"]), { name: "account create", email: "ops@example.com" });
    assert.deepEqual(parseCommand(["key", "create", "--name", "ci", "--account", missing.toUpperCase()]), {
      name: "key create",
      accountId: missing,
      keyName: "ci",
    });
    assert.deepEqual(parseCommand(["credits", "grant", "--account", missing, "--pack", "index"]), {
      name: "credits grant",
      accountId: missing,
      pack: "Index",
      quantity: 1,
    });
    assert.deepEqual(parseCommand(["import", "-"]), { name: "import", file: "-" });
    assert.deepEqual(parseCommand(["maintain", "stats"]), { name: "maintain", task: "stats" });
    assert.deepEqual(parseCommand(["ingest", "farcaster", "--hub", "http://127.0.0.1:3381/", "--follow", "--shard", "2"]), {
      name: "ingest farcaster",
      hub: "http://127.0.0.1:3381",
      follow: true,
      shard: 2,
      concurrency: 16,
    });
    assert.throws(() => parseCommand(["ingest", "farcaster"]), /^Error: Missing --hub/);
    assert.throws(() => parseCommand(["ingest", "farcaster", "--hub", "ftp://x"]), /Invalid --hub "ftp:\/\/x"/);
    assert.throws(() => parseCommand(["ingest", "farcaster", "--hub", "http://h", "--concurrency", "0"]), /Invalid --concurrency "0": expected a whole number from 1 to 256/);
  });

  test("refuses bad input with one line", () => {
    const cases: [string[], string][] = [
      [[], "Missing command: expected account create, key create, credits grant, import, maintain, ingest farcaster, x402 redeem|calls|call, connection list|revoke, opt-out list|add|restore or webhooks list"],
      [["account"], 'Unknown command "account": expected account create, key create, credits grant, import, maintain, ingest farcaster, x402 redeem|calls|call, connection list|revoke, opt-out list|add|restore or webhooks list'],
      [["account", "create", "--mail", "a@b.co"], "Unknown option --mail for account create (options: --email)"],
      [["account", "create", "--email"], "Option --email needs a value"],
      [["account", "create", "--email", "a@b.co", "--email", "c@d.co"], "Option --email is given twice"],
      [["account", "create", "extra"], 'Unexpected argument "extra" for account create'],
      [["account", "create", "--email", "not-an-email"], 'Invalid --email "not-an-email": expected an email address'],
      [["key", "create"], "Missing --account: key create needs an account ID"],
      [["key", "create", "--account", "42"], 'Invalid --account "42": expected an account ID (a UUID)'],
      [["credits", "grant", "--account", missing], "Missing --pack: expected Agent, Scale, Index"],
      [["credits", "grant", "--account", missing, "--pack", "Agent", "--quantity", "1001"], 'Invalid --quantity "1001": expected a whole number from 1 to 1000'],
      [["credits", "grant", "--account", missing, "--pack", "Agent", "--quantity", "1.5"], 'Invalid --quantity "1.5": expected a whole number from 1 to 1000'],
      [["credits", "grant", "--account", missing, "--pack", "Agent", "--quantity", "0"], 'Invalid --quantity "0": expected a whole number from 1 to 1000'],
      [["import"], "Missing FILE: import needs a file name, or - for standard input"],
      [["import", "a", "b"], 'Unexpected argument "b" for import'],
      [["maintain", "weekly"], 'Unknown maintain task "weekly": expected reachability, stats, all'],
    ];
    for (const [args, message] of cases) {
      assert.throws(() => parseCommand(args), (error: Error) => error instanceof UsageError && error.message === message, args.join(" "));
    }
  });
});

describe("admin CLI [postgres]", () => {
  let url: string;
  let drop: () => Promise<void>;
  let db: Db;
  let env: Record<string, string>;
  let accountId: string;

  before(async () => {
    ({ url, drop } = await createPostgresDatabase());
    env = { DATABASE_URL: url };
    db = await openDatabase({ databaseUrl: url, max: 1 });
  });
  after(async () => {
    await db.close();
    await drop();
  });

  test("account create, key create and credits grant print JSON and write the ledger", async () => {
    const account = json(await admin(["account", "create", "--email", "Ops@Example.com"], env));
    accountId = account.account_id as string;
    assert.match(accountId, /^[0-9a-f-]{36}$/);
    const [row] = await db.query("SELECT email, free_allowance FROM accounts WHERE id = $1", [accountId]);
    assert.deepEqual(row, { email: "ops@example.com", free_allowance: true });

    const key = json(await admin(["key", "create", "--account", accountId, "--name", "ci"], env));
    assert.match(key.api_key as string, /^wid_live_[A-Za-z0-9]{32}$/);
    assert.equal(key.prefix, (key.api_key as string).slice(0, 12));
    const [stored] = await db.query("SELECT id, name, prefix FROM api_keys WHERE account_id = $1", [accountId]);
    assert.deepEqual(stored, { id: key.key_id, name: "ci", prefix: key.prefix });

    // two grants of the same pack are two grants: each admin grant has its own key
    for (const expected of [50_000, 75_000]) {
      const balance = json(await admin(["credits", "grant", "--account", accountId, "--pack", "Scale", "--quantity", String(expected === 50_000 ? 2 : 1)], env));
      assert.deepEqual(balance, { account_id: accountId, available: expected, on_free_allowance: false, plan: "Startup" });
    }
    const grants = await db.query<{ grant_key: string }>("SELECT grant_key FROM credit_grants WHERE account_id = $1", [accountId]);
    assert.equal(grants.length, 2);
    for (const g of grants) assert.match(g.grant_key, /^admin:[0-9a-f-]{36}$/);
  });

  test("import reads a file or standard input, prints counts and is idempotent", async () => {
    const dir = mkdtempSync(join(tmpdir(), "walletid-import-"));
    try {
      const file = join(dir, "observations.ndjson");
      writeFileSync(file, IMPORT);
      assert.deepEqual(json(await admin(["import", file], env)), {
        lines: 3,
        wallets_added: 1,
        observations_added: 2,
        observations_updated: 0,
        reachability_updated: 1,
        unchanged: 0,
      });
      assert.deepEqual(json(await admin(["import", "-"], env, IMPORT)), {
        lines: 3,
        wallets_added: 0,
        observations_added: 0,
        observations_updated: 0,
        reachability_updated: 0,
        unchanged: 3,
      });
      const links = await db.query<{ value: string }>("SELECT value FROM links WHERE wallet = $1 ORDER BY kind", [WALLET]);
      assert.deepEqual(links.map((l) => l.value), ["99", "alice"]);

      refused(await admin(["import", join(dir, "missing.ndjson")], env), 1, `Cannot import ${join(dir, "missing.ndjson")}: no such file`);
      const bad = IMPORT + JSON.stringify({ wallet: "0x12", kind: "ens", route: "ens-primary", name: "x.eth" }) + "\n";
      refused(
        await admin(["import", "-"], env, bad),
        1,
        'Cannot import standard input: line 4: wallet "0x12" is not an address (0x and 40 hex digits)',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("opt-out add records the operator's reason and hides the wallet; opt-out list prints it; restore shows it again", async () => {
    assert.deepEqual(json(await admin(["opt-out", "list"], env)), { data: [] });
    const added = json(await admin(["opt-out", "add", "--wallet", WALLET.toUpperCase().replace("0X", "0x"), "--reason", "email from the owner, keys lost"], env));
    assert.equal(added.wallet, WALLET);
    assert.equal(added.opted_out, true);
    const listed = json(await admin(["opt-out", "list"], env)) as { data: Array<{ wallet: string; opted_out_at: string }> };
    assert.deepEqual(listed.data.map((o) => o.wallet), [WALLET]);
    assert.equal(listed.data[0].opted_out_at, added.effective_at);
    const [proof] = await db.query<{ via: string; reason: string }>("SELECT via, reason FROM opt_out_requests WHERE wallet = $1", [WALLET]);
    assert.deepEqual({ ...proof }, { via: "operator", reason: "email from the owner, keys lost" });
    assert.equal((await db.query("SELECT * FROM identity_rows($1::text[])", [[WALLET]])).length, 0, "answered as never seen");
    refused(await admin(["opt-out", "add", "--wallet", WALLET], env), 2, "Missing --reason: opt-out add records why (how the request came)");
    refused(await admin(["opt-out", "add", "--wallet", "0x12", "--reason", "r"], env), 2, 'Invalid --wallet "0x12": an address is 0x followed by 40 hex characters');
    assert.equal(json(await admin(["opt-out", "restore", "--wallet", WALLET, "--reason", "asked back"], env)).opted_out, false);
    assert.deepEqual(json(await admin(["opt-out", "list"], env)), { data: [] });
    assert.ok((await db.query("SELECT * FROM identity_rows($1::text[])", [[WALLET]])).length > 0, "shown again");
  });

  test("--help on admin and on every command: usage on stdout, exit 0, nothing opened", async () => {
    const whole = await admin(["--help"], {});
    assert.equal(whole.code, 0, whole.stderr);
    const commands = ["account create", "key create", "credits grant", "import", "maintain", "x402 redeem", "connection list", "connection revoke", "opt-out list", "opt-out add", "opt-out restore", "webhooks list"];
    // independent processes: run them side by side
    const helps = await Promise.all(commands.map((command) => admin([...command.split(" "), "--help"], { DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" })));
    for (const [i, command] of commands.entries()) {
      assert.ok(whole.stdout.includes(command), `the usage names ${command}`);
      const one = helps[i];
      assert.equal(one.code, 0, `${command} --help: ${one.stderr}`);
      assert.match(one.stdout, new RegExp(`^Usage: npm run admin -- ${command}`), one.stdout);
      assert.ok(one.stdout.split("\n").length >= 3, `${command} --help says what it does: ${one.stdout}`);
    }
  });

  test("the README's own command line (npm run --silent admin -- ...) prints JSON that parses", async () => {
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    const line = readme.split("\n").find((l) => l.startsWith("npm run --silent admin -- account create"));
    assert.ok(line, "the README shows the admin commands with npm run --silent");
    const command = line!.split("#")[0].replace("[--email E]", "").trim();
    const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn("sh", ["-c", command], { cwd: REPO, env: { ...process.env, ...env } });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.stderr.on("data", (d) => (stderr += d));
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
    assert.equal(out.code, 0, out.stderr);
    const created = JSON.parse(out.stdout).account_id as string;
    assert.match(created, /^[0-9a-f-]{36}$/);
    await db.query("DELETE FROM accounts WHERE id = $1", [created]); // the tests below count accounts
  });

  test("bad input: one line on stderr and a non-zero exit", async () => {
    const missing = "00000000-0000-4000-8000-000000000000";
    const cases: [string[], number, string][] = [
      [["acount", "create"], 2, 'Unknown command "acount create": expected account create, key create, credits grant, import, maintain, ingest farcaster, x402 redeem|calls|call, connection list|revoke, opt-out list|add|restore or webhooks list'],
      [["key", "create", "--account", missing], 1, `Cannot create key: account ${missing} does not exist`],
      [["credits", "grant", "--account", missing, "--pack", "Agent"], 1, `Cannot grant credits: account ${missing} does not exist`],
      [["account", "create", "--email", "ops@example.com"], 1, "Cannot create account: an account with email ops@example.com already exists"],
    ];
    // independent processes: run them side by side
    const runs = await Promise.all(cases.map(([args]) => admin(args, env)));
    runs.forEach((run, i) => refused(run, cases[i][1], cases[i][2]));
    assert.equal((await db.query("SELECT count(*)::integer AS n FROM accounts"))[0].n, 1);
    refused(await admin(["account", "create"], { DATABASE_URL: "mysql://x" }), 1, "Cannot run admin: DATABASE_URL must be a postgres:// URL");
  });

  test("a key beyond the cap of 10 is refused", async () => {
    const now = new Date();
    for (let active = 1; active < 10; active++) assert.equal((await createApiKey(db, { accountId, now })).ok, true);
    refused(await admin(["key", "create", "--account", accountId], env), 1, `Cannot create key: account ${accountId} already has 10 active keys`);
  });
  test("connection list and connection revoke: an OAuth connection listed, then ended with its tokens", async () => {
    const now = () => new Date();
    const oauth: OAuthDeps = {
      db,
      now,
      log: () => {},
      issuer: "http://127.0.0.1:1",
      resource: "http://127.0.0.1:1/mcp",
      clientAddress: () => "test",
    };
    const registered = await registerClient(oauth, { redirect_uris: ["http://127.0.0.1:9/cb"], client_name: "CLI host" });
    assert.ok(registered.ok);
    const verifier = "v".repeat(43);
    const code = await issueCode(oauth, {
      clientId: registered.client.clientId,
      accountId,
      redirectUri: "http://127.0.0.1:9/cb",
      codeChallenge: await pkceChallenge(verifier),
      scope: "mcp",
      resource: oauth.resource,
    });
    const tokens = await exchangeCode(oauth, { code, clientId: registered.client.clientId, redirectUri: "http://127.0.0.1:9/cb", codeVerifier: verifier });
    assert.ok(tokens.ok);
    const listed = json(await admin(["connection", "list", "--account", accountId], env)) as { connections: Array<Record<string, unknown>> };
    assert.equal(listed.connections.length, 1);
    assert.equal(listed.connections[0].client_name, "CLI host");
    assert.equal(listed.connections[0].client_id, registered.client.clientId);
    const id = listed.connections[0].id as string;
    assert.deepEqual(json(await admin(["connection", "revoke", "--id", id], env)), { connection_id: id, revoked: true });
    assert.deepEqual(await verifyAccessToken(oauth, tokens.tokens.access_token), { ok: false }, "its access token stops at once");
    assert.deepEqual((json(await admin(["connection", "list", "--account", accountId], env)) as { connections: unknown[] }).connections, []);
    refused(await admin(["connection", "revoke", "--id", id], env), 1, `Cannot revoke connection ${id}: no live connection has this ID`);
    refused(await admin(["connection", "revoke"], env), 2, "Missing --id: connection revoke needs a connection ID");
    refused(await admin(["connection", "list", "--account", "00000000-0000-0000-0000-000000000000"], env), 1, /^Cannot list connections: account .* does not exist\n$/);
  });

  test("webhooks list: the account's endpoints without secrets, deliveries counted by status", async () => {
    const id = crypto.randomUUID();
    await db.query(
      "INSERT INTO webhook_endpoints (id, account_id, url, events, secret_enc, created_at) VALUES ($1, $2, 'https://hooks.example/in', ARRAY['job.completed'], 'sealed-secret', now())",
      [id, accountId],
    );
    const listed = json(await admin(["webhooks", "list", "--account", accountId], env)) as { data: Array<Record<string, unknown>> };
    assert.equal(listed.data.length, 1);
    const { created_at, ...rest } = listed.data[0];
    assert.match(String(created_at), /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual(rest, { id, url: "https://hooks.example/in", events: ["job.completed"], enabled: true, disabled_reason: null, pending: 0, delivered: 0, failed: 0 });
    assert.ok(!JSON.stringify(listed).includes("sealed-secret"));
    refused(await admin(["webhooks", "list"], env), 2, "Missing --account: webhooks list needs an account ID");
    refused(await admin(["webhooks", "list", "--account", "00000000-0000-0000-0000-000000000000"], env), 1, /^Cannot list webhooks: account .* does not exist\n$/);
  });

  test("maintain runs the daily tasks once and prints what each did", async () => {
    await importObservations(
      db,
      [JSON.stringify({ wallet: "0x00000000000000000000000000000000000b0b00", kind: "twitter", route: "x-signin", handle: "bob_gone" })],
      { now: new Date() },
    );
    const off = json(await admin(["maintain"], env));
    assert.deepEqual(Object.keys(off), ["reachability", "stats"]);
    assert.deepEqual(off.reachability, { status: "off", reason: "X_API_URL and X_BEARER_TOKEN are not set" });
    const stats = off.stats as Record<string, unknown>;
    assert.equal(stats.status, "done");
    assert.equal(stats.total_wallets, 2);
    const [stored] = await db.query<{ as_of: Date }>("SELECT as_of FROM stats_snapshots ORDER BY as_of DESC LIMIT 1");
    assert.equal(stored.as_of.toISOString(), stats.as_of);

    const x = await startFakeX();
    try {
      x.suspend("bob_gone");
      x.live("alice");
      const withX = { ...env, X_API_URL: x.url, X_BEARER_TOKEN: FAKE_X_TOKEN };
      const ran = json(await admin(["maintain", "reachability"], withX));
      assert.deepEqual(Object.keys(ran), ["reachability"]);
      const report = ran.reachability as Record<string, unknown>;
      assert.deepEqual(
        { status: report.status, checked: report.checked, live: report.live, suspended: report.suspended },
        { status: "done", checked: 2, live: 1, suspended: 1 },
        JSON.stringify(report),
      );
      const rows = await db.query("SELECT handle, reachability FROM twitter_reachability ORDER BY handle");
      assert.deepEqual(rows, [{ handle: "alice", reachability: "live" }, { handle: "bob_gone", reachability: "suspended" }]);

      // a failed task: what happened on stdout, one line on stderr, exit 1 (a handle not checked today)
      await importObservations(
        db,
        [JSON.stringify({ wallet: "0x00000000000000000000000000000000000ca201", kind: "twitter", route: "x-signin", handle: "carol_new" })],
        { now: new Date() },
      );
      const failed = await admin(["maintain", "all"], { ...withX, X_BEARER_TOKEN: "wrong" });
      assert.equal(failed.code, 1, failed.stderr);
      assert.equal(failed.stderr, "Cannot run maintain: reachability failed: X API answered 401\n");
      const printed = JSON.parse(failed.stdout);
      assert.equal(printed.reachability.status, "failed");
      assert.equal(printed.stats.status, "done", "stats still run");
    } finally {
      await x.close();
    }
  });
});

describe("acquireDataDirLock", () => {
  test("one holder at a time; release removes only its own lock", () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), "walletid-lock-")), "nested");
    try {
      const release = acquireDataDirLock(dataDir);
      const lock = join(dataDir, "walletid.lock");
      assert.equal(readFileSync(lock, "utf8"), `${process.pid}\n`);
      assert.throws(() => acquireDataDirLock(dataDir), { message: new RegExp(`in use by a running walletid server \\(pid ${process.pid}\\)`) });
      release();
      assert.equal(existsSync(lock), false);
      release();
      assert.deepEqual(readdirSync(dataDir), []);
    } finally {
      rmSync(dirname(dataDir), { recursive: true, force: true });
    }
  });
});

describe("admin CLI [embedded]", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "walletid-admin-"));
  const env = { DATA_DIR: dataDir };
  const lock = join(dataDir, "walletid.lock");
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test("works on the data directory, replacing a stale lock and leaving none behind", async () => {
    // a lock left by a process that has exited
    const gone = spawn(process.execPath, ["-e", ""]);
    await new Promise((resolve) => gone.on("close", resolve));
    writeFileSync(lock, `${gone.pid}\n`);

    const { account_id: accountId } = json(await admin(["account", "create"], env));
    assert.equal(existsSync(lock), false);
    const key = json(await admin(["key", "create", "--account", accountId as string], env));
    assert.match(key.api_key as string, /^wid_live_/);
    const balance = json(await admin(["credits", "grant", "--account", accountId as string, "--pack", "agent", "--quantity", "3"], env));
    assert.deepEqual(balance, { account_id: accountId, available: 36, on_free_allowance: false, plan: "Developer" });
    assert.equal(json(await admin(["import", "-"], env, IMPORT)).observations_added, 2);
    assert.equal(existsSync(lock), false);
    assert.equal(existsSync(join(dataDir, "pgdata")), true);
  });

  test("refuses a data directory held by a running process", async () => {
    writeFileSync(lock, `${process.pid}\n`);
    for (const args of [["account", "create"], ["maintain", "stats"]]) {
      refused(
        await admin(args, env),
        1,
        `The embedded database in ${dataDir} is in use by a running walletid server (pid ${process.pid}): stop it, or set DATABASE_URL to use PostgreSQL`,
      );
    }
    assert.equal(readFileSync(lock, "utf8"), `${process.pid}\n`, "someone else's lock is left alone");
  });
});
