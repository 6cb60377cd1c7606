// The operator CLI (docs/operating.md, "The operator interface"): accounts, keys, credits, index imports,
// filling the index from a Farcaster hub, the daily maintenance tasks and opt-outs that come by other channels.
// Prints JSON on stdout; on bad input prints one line on stderr and exits non-zero.
import { realpathSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { readConfig, type Config } from "../src/config.ts";
import { acquireDataDirLock } from "../src/db/datadir-lock.ts";
import { openDatabase } from "../src/db/open.ts";
import { sql } from "../src/db/queries.ts";
import type { Db } from "../src/db/types.ts";
import { isAddress } from "../src/index/address.ts";
import { importObservations, InvalidLineError } from "../src/index/import.ts";
import { createAccount, grantCredits, PACK_NAMES, type PackName } from "../src/ledger/accounts.ts";
import { createApiKey, MAX_ACTIVE_KEYS } from "../src/ledger/keys.ts";
import { TASK_NAMES } from "../src/maintenance/lease.ts";
import { disconnect, listConnections } from "../src/oauth/grants.ts";
import type { HubProgress } from "../src/hub/sync.ts";
// The commands that need viem or the x402 packages (opt-outs, x402, maintain, ingest) import their
// modules when they run: loading those costs about 0.7 s, the rest of the CLI about 0.5.
const optOuts = () => import("../src/index/opt-out.ts");
const paidCalls = () => import("../src/x402/percall.ts");

const USAGE = `Usage: npm run admin -- <command>
  account create [--email E]
  key create --account ID [--name N]
  credits grant --account ID --pack ${PACK_NAMES.join("|")} [--quantity N]
  import FILE            (- reads standard input)
  maintain [reachability|stats|all]
  ingest farcaster --hub URL [--follow] [--shard N] [--concurrency N]
  x402 redeem REF        (grants a purchase that settled but was not recorded, once)
  x402 calls [--since ISO]                       (paid calls to reconcile, and per-call revenue)
  x402 call ID settled --tx HASH | x402 call ID failed   (records a reconciled paid call)
  connection list --account ID
  connection revoke --id ID   (ends an OAuth connection: its tokens stop at once)
  opt-out list
  opt-out add --wallet A --reason R
  opt-out restore --wallet A --reason R
  webhooks list --account ID`;

/** What each command does, for `<command> --help`. */
const COMMAND_HELP: Record<string, string> = {
  "account create": "Creates an account (with --email: an email-signup account). Prints {\"account_id\"}.",
  "key create": `Creates an API key for the account (at most ${MAX_ACTIVE_KEYS} active). Prints {"api_key", "prefix", "key_id"}; the key is shown once.`,
  "credits grant": "Grants --quantity (default 1) packs of --pack to the account. Prints the new balance.",
  import: "Imports an NDJSON index file (the format in docs/api.md, Import format; - reads standard input). Prints counts; a bad line stops the import with its line number.",
  maintain: "Runs the daily maintenance tasks once, now (default all). Prints what each did.",
  "ingest farcaster":
    "Backfills the index from a Farcaster hub: every fid of every shard (or --shard N), its Ethereum verifications with its username, resuming a backfill left unfinished. Prints {\"fids\", \"addresses\", \"observations\", \"last_event_id\"}. --follow backfills only when no backfill has finished, then applies the hub's events from where the follower stopped, until SIGINT or SIGTERM. One process at a time (a server with FARCASTER_HUB_URL included).",
  "x402 redeem": "Grants a purchase whose settlement went through but was not recorded, once, after a check on chain.",
  "x402 calls": "Lists the calls paid per call whose settlement outcome is unknown (check each on chain) and the per-call revenue by route since --since (default the start of this month).",
  "x402 call": "Records the outcome of a paid call whose settlement was unknown, after a check on chain: settled (with its transaction) or failed. Once.",
  "connection list": "Lists the account's OAuth connections (MCP hosts).",
  "connection revoke": "Ends an OAuth connection: its access and refresh tokens stop working at once.",
  "opt-out list": "Lists the wallets taken out of every answer (opted out). Prints {\"data\": [{\"wallet\", \"opted_out_at\"}]}.",
  "opt-out add": "Takes a wallet out of every answer at once, for a request that came by another channel (a person who lost the wallet's keys), recorded with the reason.",
  "opt-out restore": "Shows an opted-out wallet again, recorded with the reason.",
  "webhooks list": "Lists the account's webhook endpoints (never their secrets), with their deliveries counted by status. Prints {\"data\": [...]}.",
};

/** The help of `argv`'s command (its usage line and what it does), or the whole usage. */
export function helpFor(argv: string[]): string {
  const words = argv.filter((a) => a !== "--help" && a !== "-h" && a !== "help");
  const name = Object.keys(COMMAND_HELP).find((c) => c === words.slice(0, c.split(" ").length).join(" "));
  if (!name) return `${USAGE}\n\nEvery command prints JSON on stdout (use npm run --silent admin -- ... to pipe it);\nbad input is one line on stderr and exit 2, a failure one line and exit 1.\n<command> --help describes one command.`;
  const line = USAGE.split("\n").find((l) => l.trim().startsWith(name))!.trim();
  return `Usage: npm run admin -- ${line}\n\n${COMMAND_HELP[name]}`;
}

const MAINTAIN_TASKS = ["reachability", "stats", "all"] as const;

/** Bad input on the command line: exit 2, nothing was opened. */
export class UsageError extends Error {}
/** The command was understood but cannot be done: exit 1. */
class CommandError extends Error {}

export type Command =
  | { name: "account create"; email?: string }
  | { name: "key create"; accountId: string; keyName?: string }
  | { name: "credits grant"; accountId: string; pack: PackName; quantity: number }
  | { name: "import"; file: string }
  | { name: "maintain"; task: (typeof MAINTAIN_TASKS)[number] }
  | { name: "ingest farcaster"; hub: string; follow: boolean; shard?: number; concurrency: number }
  | { name: "x402 redeem"; reference: string }
  | { name: "x402 calls"; since?: Date }
  | { name: "x402 call"; id: string; outcome: "settled" | "failed"; txHash?: string }
  | { name: "connection list"; accountId: string }
  | { name: "connection revoke"; connectionId: string }
  | { name: "opt-out list" }
  | { name: "opt-out add" | "opt-out restore"; wallet: string; reason: string }
  | { name: "webhooks list"; accountId: string };

/** `--name value` or `--name=value`; every option takes a value and may appear once. */
function parseOptions(command: string, args: string[], allowed: string[]): { options: Map<string, string>; rest: string[] } {
  const options = new Map<string, string>();
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith("--")) {
      rest.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    if (!allowed.includes(name)) {
      const known = allowed.length > 0 ? ` (options: ${allowed.map((a) => `--${a}`).join(", ")})` : "";
      throw new UsageError(`Unknown option --${name} for ${command}${known}`);
    }
    const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value === "" || (eq === -1 && value.startsWith("--"))) {
      throw new UsageError(`Option --${name} needs a value`);
    }
    if (options.has(name)) throw new UsageError(`Option --${name} is given twice`);
    options.set(name, value);
  }
  return { options, rest };
}

function noExtra(command: string, rest: string[]): void {
  if (rest.length > 0) throw new UsageError(`Unexpected argument ${JSON.stringify(rest[0])} for ${command}`);
}

function uuidOption(command: string, options: Map<string, string>, name: string, what: string): string {
  const id = options.get(name);
  if (id === undefined) throw new UsageError(`Missing --${name}: ${command} needs ${what}`);
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) {
    throw new UsageError(`Invalid --${name} ${JSON.stringify(id)}: expected ${what} (a UUID)`);
  }
  return id.toLowerCase();
}

function accountOption(command: string, options: Map<string, string>): string {
  return uuidOption(command, options, "account", "an account ID");
}

/** Pure: the command line to a command, or a UsageError with the one line to print. */
export function parseCommand(argv: string[]): Command {
  const [first, second, ...more] = argv;
  const pair = `${first ?? ""} ${second ?? ""}`.trim();
  switch (pair) {
    case "account create": {
      const { options, rest } = parseOptions(pair, more, ["email"]);
      noExtra(pair, rest);
      const email = options.get("email");
      if (email !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) {
        throw new UsageError(`Invalid --email ${JSON.stringify(email)}: expected an email address`);
      }
      return { name: pair, email: email?.toLowerCase() };
    }
    case "key create": {
      const { options, rest } = parseOptions(pair, more, ["account", "name"]);
      noExtra(pair, rest);
      const keyName = options.get("name");
      if (keyName !== undefined && keyName.length > 100) throw new UsageError("Invalid --name: at most 100 characters");
      return { name: pair, accountId: accountOption(pair, options), keyName };
    }
    case "credits grant": {
      const { options, rest } = parseOptions(pair, more, ["account", "pack", "quantity"]);
      noExtra(pair, rest);
      const accountId = accountOption(pair, options);
      const packOption = options.get("pack");
      if (packOption === undefined) throw new UsageError(`Missing --pack: expected ${PACK_NAMES.join(", ")}`);
      const pack = PACK_NAMES.find((p) => p.toLowerCase() === packOption.toLowerCase());
      if (!pack) throw new UsageError(`Invalid --pack ${JSON.stringify(packOption)}: expected ${PACK_NAMES.join(", ")}`);
      const quantityOption = options.get("quantity") ?? "1";
      const quantity = Number(quantityOption);
      if (!/^\d+$/.test(quantityOption) || quantity < 1 || quantity > 1000) {
        throw new UsageError(`Invalid --quantity ${JSON.stringify(quantityOption)}: expected a whole number from 1 to 1000`);
      }
      return { name: pair, accountId, pack, quantity };
    }
    case "connection list": {
      const { options, rest } = parseOptions(pair, more, ["account"]);
      noExtra(pair, rest);
      return { name: pair, accountId: accountOption(pair, options) };
    }
    case "webhooks list": {
      const { options, rest } = parseOptions(pair, more, ["account"]);
      noExtra(pair, rest);
      return { name: pair, accountId: accountOption(pair, options) };
    }
    case "ingest farcaster": {
      const follow = more.includes("--follow");
      const { options, rest } = parseOptions(pair, more.filter((a) => a !== "--follow"), ["hub", "shard", "concurrency", "follow"]);
      noExtra(pair, rest);
      const hub = options.get("hub");
      if (hub === undefined) throw new UsageError("Missing --hub: ingest farcaster needs the hub's HTTP API URL, e.g. http://127.0.0.1:3381");
      if (!/^https?:\/\/[^\s/]+/.test(hub)) throw new UsageError(`Invalid --hub ${JSON.stringify(hub)}: expected an http:// or https:// URL`);
      const whole = (name: string, min: number, max: number): number | undefined => {
        const value = options.get(name);
        if (value === undefined) return undefined;
        if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
          throw new UsageError(`Invalid --${name} ${JSON.stringify(value)}: expected a whole number from ${min} to ${max}`);
        }
        return Number(value);
      };
      return { name: pair, hub: hub.replace(/\/+$/, ""), follow, shard: whole("shard", 0, 1024), concurrency: whole("concurrency", 1, 256) ?? 16 };
    }
    case "connection revoke": {
      const { options, rest } = parseOptions(pair, more, ["id"]);
      noExtra(pair, rest);
      return { name: pair, connectionId: uuidOption(pair, options, "id", "a connection ID") };
    }
    case "opt-out list": {
      const { rest } = parseOptions(pair, more, []);
      noExtra(pair, rest);
      return { name: pair };
    }
    case "opt-out add":
    case "opt-out restore": {
      const { options, rest } = parseOptions(pair, more, ["wallet", "reason"]);
      noExtra(pair, rest);
      const wallet = options.get("wallet");
      if (wallet === undefined) throw new UsageError(`Missing --wallet: ${pair} needs the wallet's address`);
      if (!isAddress(wallet)) throw new UsageError(`Invalid --wallet ${JSON.stringify(wallet)}: an address is 0x followed by 40 hex characters`);
      const reason = options.get("reason");
      if (reason === undefined) throw new UsageError(`Missing --reason: ${pair} records why (how the request came)`);
      if (reason.length > 500) throw new UsageError("Invalid --reason: at most 500 characters");
      return { name: pair, wallet: wallet.toLowerCase(), reason };
    }
  }
  if (first === "import") {
    const { rest } = parseOptions(first, argv.slice(1), []);
    if (rest.length === 0) throw new UsageError("Missing FILE: import needs a file name, or - for standard input");
    noExtra(first, rest.slice(1));
    return { name: first, file: rest[0] };
  }
  if (first === "maintain") {
    const { rest } = parseOptions(first, argv.slice(1), []);
    noExtra(first, rest.slice(1));
    const task = rest[0] ?? "all";
    if (!MAINTAIN_TASKS.includes(task as (typeof MAINTAIN_TASKS)[number])) {
      throw new UsageError(`Unknown maintain task ${JSON.stringify(task)}: expected ${MAINTAIN_TASKS.join(", ")}`);
    }
    return { name: first, task: task as (typeof MAINTAIN_TASKS)[number] };
  }
  if (pair === "x402 redeem") {
    const { rest } = parseOptions(pair, more, []);
    if (rest.length === 0) throw new UsageError("Missing REF: x402 redeem needs the settlement reference a purchase's 500 carried");
    noExtra(pair, rest.slice(1));
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(rest[0])) {
      throw new UsageError(`Invalid REF ${JSON.stringify(rest[0])}: a settlement reference is a UUID`);
    }
    return { name: pair, reference: rest[0].toLowerCase() };
  }
  if (pair === "x402 calls") {
    const { options, rest } = parseOptions(pair, more, ["since"]);
    noExtra(pair, rest);
    const since = options.get("since");
    if (since !== undefined && Number.isNaN(Date.parse(since))) throw new UsageError(`Invalid --since ${JSON.stringify(since)}: expected an ISO timestamp`);
    return { name: pair, since: since === undefined ? undefined : new Date(since) };
  }
  if (pair === "x402 call") {
    const { options, rest } = parseOptions(pair, more, ["tx"]);
    const [id, outcome] = rest;
    noExtra(pair, rest.slice(2));
    if (!id || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) throw new UsageError("Missing or invalid ID: x402 call needs the call's id (a UUID) from x402 calls");
    if (outcome !== "settled" && outcome !== "failed") throw new UsageError("Missing outcome: x402 call ID settled --tx HASH, or x402 call ID failed");
    const txHash = options.get("tx");
    if (outcome === "settled" && (txHash === undefined || !/^0x[0-9a-fA-F]{64}$/.test(txHash))) throw new UsageError("Missing or invalid --tx: a settled call needs its transaction hash (0x + 64 hex)");
    if (outcome === "failed" && txHash !== undefined) throw new UsageError("--tx is for a settled call only");
    return { name: pair, id: id.toLowerCase(), outcome, txHash: txHash?.toLowerCase() };
  }
  const commands = "account create, key create, credits grant, import, maintain, ingest farcaster, x402 redeem|calls|call, connection list|revoke, opt-out list|add|restore or webhooks list";
  if (first === undefined) throw new UsageError(`Missing command: expected ${commands}`);
  throw new UsageError(`Unknown command ${JSON.stringify(argv.slice(0, 2).join(" "))}: expected ${commands}`);
}

/** Opened before the database, so a missing file fails fast; read only once the import starts. */
async function openInput(file: string): Promise<Readable> {
  let input: Readable;
  if (file === "-") input = process.stdin;
  else {
    try {
      input = (await open(file)).createReadStream();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const reason = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : (error as Error).message;
      throw new CommandError(`Cannot import ${file}: ${reason}`);
    }
  }
  return input;
}

async function accountExists(db: Db, accountId: string): Promise<boolean> {
  return (await db.query(sql("accounts_select_by_id"), [accountId])).length > 0;
}

async function run(
  db: Db,
  command: Exclude<Command, { name: "maintain" } | { name: "ingest farcaster" }>,
  input: Readable | undefined,
): Promise<unknown> {
  const now = new Date();
  switch (command.name) {
    case "account create": {
      try {
        const { accountId } = await createAccount(db, { email: command.email, now });
        return { account_id: accountId };
      } catch (error) {
        if ((error as { code?: string }).code === "23505") {
          throw new CommandError(`Cannot create account: an account with email ${command.email} already exists`);
        }
        throw error;
      }
    }
    case "key create": {
      const key = await createApiKey(db, { accountId: command.accountId, name: command.keyName, now });
      if (!key.ok && key.code === "ACCOUNT_NOT_FOUND") {
        throw new CommandError(`Cannot create key: account ${command.accountId} does not exist`);
      }
      if (!key.ok) {
        throw new CommandError(`Cannot create key: account ${command.accountId} already has ${MAX_ACTIVE_KEYS} active keys`);
      }
      return { api_key: key.apiKey, prefix: key.prefix, key_id: key.keyId };
    }
    case "credits grant": {
      if (!(await accountExists(db, command.accountId))) {
        throw new CommandError(`Cannot grant credits: account ${command.accountId} does not exist`);
      }
      // every admin grant is a grant of its own, never a retry of an earlier one
      const { credits } = await grantCredits(db, {
        accountId: command.accountId,
        pack: command.pack,
        quantity: command.quantity,
        grantKey: `admin:${crypto.randomUUID()}`,
        now,
      });
      return {
        account_id: command.accountId,
        available: credits.available,
        on_free_allowance: credits.onFreeAllowance,
        plan: credits.plan,
      };
    }
    case "connection list": {
      if (!(await accountExists(db, command.accountId))) {
        throw new CommandError(`Cannot list connections: account ${command.accountId} does not exist`);
      }
      return { account_id: command.accountId, connections: await listConnections(db, command.accountId) };
    }
    case "webhooks list": {
      if (!(await accountExists(db, command.accountId))) {
        throw new CommandError(`Cannot list webhooks: account ${command.accountId} does not exist`);
      }
      const rows = await db.query<{ created_at: Date } & Record<string, unknown>>(sql("webhook_endpoints_select_admin"), [command.accountId]);
      return { data: rows.map((r) => ({ ...r, created_at: new Date(r.created_at).toISOString() })) };
    }
    case "connection revoke": {
      if (!(await disconnect(db, { connectionId: command.connectionId, now }))) {
        throw new CommandError(`Cannot revoke connection ${command.connectionId}: no live connection has this ID`);
      }
      return { connection_id: command.connectionId, revoked: true };
    }
    case "x402 redeem":
      return await redeem(db, command.reference, now);
    case "opt-out list":
      return { data: (await (await optOuts()).listOptOuts(db)).map((o) => ({ wallet: o.wallet, opted_out_at: o.opted_out_at.toISOString() })) };
    case "opt-out add":
    case "opt-out restore": {
      const done = await (await optOuts()).recordOperatorRequest(db, {
        wallet: command.wallet,
        action: command.name === "opt-out add" ? "remove" : "restore",
        reason: command.reason,
        now,
      });
      return { wallet: done.wallet, opted_out: done.opted_out, effective_at: done.effective_at.toISOString() };
    }
    case "x402 calls": {
      const { openCalls, revenueSince } = await paidCalls();
      const since = command.since ?? new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
      return { open: await openCalls(db, now), revenue: { since: since.toISOString(), routes: await revenueSince(db, since) } };
    }
    case "x402 call": {
      const row = await (await paidCalls()).recordCall(db, { id: command.id, state: command.outcome, txHash: command.txHash, reason: "reconciled by an operator", now });
      if (!row) throw new CommandError(`Cannot record call ${command.id}: no paid call with this id is open (unknown id, or its outcome is already recorded)`);
      return { id: row.id, state: row.state, payer: row.payer, route: row.route, matches: row.matches, amount: row.amount, tx_hash: row.tx_hash };
    }
    case "import":
      try {
        // readline drops lines that arrive before iteration begins: create it only here
        return await importObservations(db, createInterface({ input: input!, crlfDelay: Infinity }), { now });
      } catch (error) {
        if (error instanceof InvalidLineError) {
          throw new CommandError(`Cannot import ${command.file === "-" ? "standard input" : command.file}: ${error.message}`);
        }
        throw error;
      }
  }
}

/**
 * Grants a purchase whose payment settled (or may have: check the transfer on chain first) and
 * was not recorded, exactly once: the grant is keyed by the payment, and a second run finds it
 * granted. A keyless purchase mints its key here; it is printed once, to hand to the buyer.
 */
async function redeem(db: Db, reference: string, now: Date): Promise<unknown> {
  const { grantPayment } = await import("../src/x402/purchase.ts");
  const result = await grantPayment(db, { paymentId: reference, now });
  if (!result.ok) {
    switch (result.code) {
      case "NOT_FOUND":
        throw new CommandError(`Cannot redeem ${reference}: no purchase has this settlement reference`);
      case "ALREADY_GRANTED":
        throw new CommandError(`Cannot redeem ${reference}: already redeemed (granted ${result.grantedAt.toISOString()} to account ${result.accountId})`);
      case "FAILED":
        throw new CommandError(`Cannot redeem ${reference}: its settlement failed (${result.reason ?? "no reason given"}), so nothing was paid`);
    }
  }
  const g = result.grant;
  return {
    settlement: g.paymentId,
    account_id: g.accountId,
    api_key: g.key?.apiKey ?? null,
    credited_to_key_prefix: g.topupPrefix ?? undefined,
    pack: "Agent",
    quantity: g.quantity,
    matches_added: g.matchesAdded,
    matches_available: g.matchesAvailable,
    loyalty_bonus: g.loyalty,
  };
}

/**
 * Runs the daily tasks once, now, whatever the schedule says (for a container's cron), under the
 * same leases as the server's scheduler: a task another instance is running is reported skipped.
 * Prints what each task did; a failed task also gets one line on stderr and exit 1.
 */
async function maintain(db: Db, config: Config, task: Extract<Command, { name: "maintain" }>["task"]): Promise<number> {
  const { maintenanceDeps, runTasks } = await import("../src/maintenance/run.ts");
  const deps = maintenanceDeps(config, { db, now: () => new Date(), log: () => {} });
  const reports = await runTasks(deps, task === "all" ? TASK_NAMES : [task]);
  console.log(JSON.stringify(Object.fromEntries(reports.map(({ task: name, ...rest }) => [name, rest])), null, 2));
  const failed = reports.find((r) => r.status === "failed");
  if (!failed) return 0;
  console.error(`Cannot run maintain: ${failed.task} failed: ${"reason" in failed ? failed.reason : "unknown reason"}`);
  return 1;
}

/** The progress line a terminal sees on stderr, rewritten in place. */
function progressLine(p: HubProgress): string {
  return p.phase === "backfill"
    ? `backfill: ${p.fids} fids, ${p.addresses} addresses, ${p.shardsDone}/${p.shards} shards done`
    : `follow: ${p.events} events applied, last event ${p.lastEventId ?? "-"}`;
}

/**
 * Backfills from the hub (resuming one left unfinished) and, with --follow, follows it until
 * SIGINT or SIGTERM, under the hub lease: refused while another process (a server with
 * FARCASTER_HUB_URL) holds it. Prints the counts as JSON.
 */
async function ingestFarcaster(db: Db, config: Config, command: Extract<Command, { name: "ingest farcaster" }>): Promise<number> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const tty = process.stderr.isTTY;
  let lastDrawn = 0;
  const { runHubSync } = await import("../src/hub/sync.ts");
  try {
    const outcome = await runHubSync({
      db,
      hubUrl: command.hub,
      apiKey: config.hub?.apiKey ?? process.env.FARCASTER_HUB_API_KEY,
      concurrency: command.concurrency,
      shard: command.shard,
      leaseMs: Number(process.env.HUB_LEASE_SECONDS || 30) * 1000,
      pollMs: Number(process.env.HUB_POLL_MS || 250),
      timeoutMs: config.jobs.upstreamTimeoutMs,
      now: () => new Date(),
      log: (line, level) => {
        if (level === "error" || level === "warn") console.error(line);
      },
      signal: stop.signal,
      // without --follow: a backfill (resuming one left unfinished); with it, a backfill only
      // when none has finished, then the follower from where it stopped
      backfill: command.follow ? "once" : "always",
      follow: command.follow,
      onProgress: (p) => {
        if (!tty || Date.now() - lastDrawn < 200) return;
        lastDrawn = Date.now();
        process.stderr.write(`\r\x1b[K${progressLine(p)}`);
      },
    });
    if (tty) process.stderr.write("\r\x1b[K");
    if (outcome.status === "busy") {
      throw new CommandError(
        `Cannot ingest farcaster: another process is syncing the hub${outcome.holderUntil ? ` (its lease runs until ${outcome.holderUntil.toISOString()})` : ""}; stop it or wait`,
      );
    }
    console.log(JSON.stringify(outcome.result, null, 2));
    return 0;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === "help" || argv.includes("--help") || argv.includes("-h")) {
    console.log(helpFor(argv));
    return 0;
  }
  const command = parseCommand(argv);
  const input = command.name === "import" ? await openInput(command.file) : undefined;

  let config;
  try {
    config = readConfig(process.env);
  } catch (error) {
    throw new CommandError((error as Error).message.replace(/^Cannot start: /, "Cannot run admin: "));
  }
  // the same files the server uses; the lock keeps a running embedded server and this apart
  const release = config.databaseUrl ? () => {} : acquireDataDirLock(config.dataDir);
  try {
    const db = await openDatabase(
      config.databaseUrl
        ? // ingest farcaster: its lease is renewed beside a page's bulk transaction, never queued behind it
          // and, a batch command, waits a minute for an answer where the server waits seconds: a
          // statement past its deadline resets the pool, and the page's transaction with it
          command.name === "ingest farcaster"
          ? { databaseUrl: config.databaseUrl, max: 3, timeouts: { ...config.databaseTimeouts, statementMs: Math.max(config.databaseTimeouts.statementMs, 60_000) }, pooler: config.databasePooler }
          : { databaseUrl: config.databaseUrl, max: 1, timeouts: config.databaseTimeouts, pooler: config.databasePooler }
        : { dataDir: join(config.dataDir, "pgdata"), timeouts: config.databaseTimeouts },
    );
    try {
      if (command.name === "maintain") return await maintain(db, config, command.task);
      if (command.name === "ingest farcaster") return await ingestFarcaster(db, config, command);
      console.log(JSON.stringify(await run(db, command, input), null, 2));
      return 0;
    } finally {
      await db.close();
    }
  } finally {
    release();
  }
}

/** One line, never a stack; an unexpected failure (database down, ...) says it is one. */
function oneLine(error: unknown): string {
  const message = (error instanceof Error ? error.message : String(error)).split("\n")[0];
  if (error instanceof UsageError || error instanceof CommandError || /^(Cannot|The embedded) /.test(message)) return message;
  return `Cannot run admin: ${message || "unknown error"}`;
}

// imported by tests for parseCommand: run only as the entry point
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) runCli();

function runCli(): void {
  let settled = false;
  // an event loop that empties before the command settles would otherwise exit 0 with no output
  process.on("exit", () => {
    if (settled) return;
    console.error("Cannot run admin: the command stopped before finishing");
    process.exitCode = 1;
  });
  main(process.argv.slice(2)).then(
    (code) => {
      settled = true;
      process.exitCode = code;
    },
    (error: unknown) => {
      settled = true;
      console.error(oneLine(error));
      process.exitCode = error instanceof UsageError ? 2 : 1;
    },
  );
}
