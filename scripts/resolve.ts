// npm run resolve -- FILE [--out results.csv|results.ndjson] [--format csv|ndjson] [--column NAME]
//                          [--url URL] [--interval SECONDS] [--dry-run] [--yes] [--confirm-above N]
// A client for long lists: reads addresses (one a line, or a column of a CSV), prints the
// estimate, submits a job with WALLETID_API_KEY, shows progress while it runs, then pages the
// results into CSV or NDJSON (standard output without --out). FILE - reads standard input.
import { createWriteStream, readFileSync } from "node:fs";
import process from "node:process";
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HEADER_NAMES = ["wallet", "address", "wallet_address", "wallets", "addresses"];

class UsageError extends Error {}

export const HELP = `Usage: WALLETID_API_KEY=... npm run resolve -- FILE [options]

Resolves a list of wallet addresses with an async job: reads FILE (one address a line, or a CSV
whose address column is found by its header, by --column, or as the first column of addresses;
- reads standard input), prints the free estimate, submits the job, shows its progress on
stderr, and writes the results as CSV or NDJSON (standard output without --out).

Options:
  --out PATH            write the results to PATH (.ndjson/.jsonl picks NDJSON)
  --format csv|ndjson   the results' format (default csv, or by --out's extension)
  --column NAME         the CSV column holding the addresses
  --url URL             the service (default WALLETID_URL or http://localhost:8787)
  --interval SECONDS    how often to poll the job (default 2)
  --dry-run             print the free estimate only; submit nothing
  --yes                 submit even when the job may bill more than --confirm-above credits
  --confirm-above N     ask before a job that may bill more than N credits (default 1000);
                        without a terminal to ask on, stop unless --yes
  -h, --help            this help

A job bills one credit per wallet that resolves to X or farcaster; the estimate gives the range.`;

interface Options {
  file: string;
  out?: string;
  format: "csv" | "ndjson";
  column?: string;
  url: string;
  key: string;
  intervalMs: number;
  dryRun: boolean;
  yes: boolean;
  confirmAbove: number;
}

function readOptions(argv: string[]): Options {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: "string" },
      format: { type: "string" },
      column: { type: "string" },
      url: { type: "string" },
      interval: { type: "string", default: "2" },
      "dry-run": { type: "boolean", default: false },
      yes: { type: "boolean", short: "y", default: false },
      "confirm-above": { type: "string", default: "1000" },
    },
  });
  if (positionals.length !== 1) throw new UsageError("Cannot resolve: give one FILE (or - for standard input)");
  const key = process.env.WALLETID_API_KEY;
  if (!key) throw new UsageError("Cannot resolve: set WALLETID_API_KEY to your API key");
  const format = values.format ?? (values.out && /\.(nd)?jsonl?$/i.test(values.out) ? "ndjson" : "csv");
  if (format !== "csv" && format !== "ndjson") throw new UsageError("Cannot resolve: --format must be csv or ndjson");
  const interval = Number(values.interval);
  if (!Number.isFinite(interval) || interval <= 0) throw new UsageError("Cannot resolve: --interval must be a number of seconds");
  const confirmAbove = Number(values["confirm-above"]);
  if (!Number.isInteger(confirmAbove) || confirmAbove < 0) throw new UsageError("Cannot resolve: --confirm-above must be a whole number of credits");
  return {
    file: positionals[0],
    out: values.out,
    format,
    column: values.column,
    url: (values.url ?? process.env.WALLETID_URL ?? "http://localhost:8787").replace(/\/+$/, ""),
    key,
    intervalMs: interval * 1000,
    dryRun: values["dry-run"]!,
    yes: values.yes!,
    confirmAbove,
  };
}

/** One CSV line into cells: commas, double quotes around a cell, "" for a quote inside one. */
function csvCells(line: string): string[] {
  const cells: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') (cell += '"'), i++;
      else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") cells.push(cell.trim()), (cell = "");
    else cell += ch;
  }
  cells.push(cell.trim());
  return cells;
}

/** Addresses of a list: one a line, or the address column of a CSV (by header, or the first column holding addresses). */
function readAddresses(text: string, column?: string): string[] {
  const rows = text.split(/\r?\n/).filter((l) => l.trim() !== "").map(csvCells);
  if (rows.length === 0) throw new UsageError("Cannot resolve: the file holds no addresses");
  let index: number;
  let start = 0;
  const header = rows[0].map((c) => c.toLowerCase());
  if (column !== undefined) {
    index = header.indexOf(column.toLowerCase());
    if (index < 0) throw new UsageError(`Cannot resolve: no column ${JSON.stringify(column)} in the header line`);
    start = 1;
  } else if ((index = header.findIndex((c) => HEADER_NAMES.includes(c))) >= 0) {
    start = 1;
  } else {
    index = rows[0].findIndex((c) => ADDRESS.test(c));
    if (index < 0) {
      start = 1;
      index = (rows[1] ?? []).findIndex((c) => ADDRESS.test(c));
    }
    if (index < 0) throw new UsageError("Cannot resolve: no column of addresses found (use --column NAME)");
  }
  const addresses: string[] = [];
  const bad: string[] = [];
  rows.slice(start).forEach((row, i) => {
    const cell = row[index] ?? "";
    if (ADDRESS.test(cell)) addresses.push(cell);
    else bad.push(`line ${i + start + 1}: ${JSON.stringify(cell.slice(0, 50))}`);
  });
  if (bad.length > 0) {
    throw new UsageError(
      `Cannot resolve: ${bad.length} malformed address${bad.length === 1 ? "" : "es"} (an address is 0x and 40 hex characters): ${bad.slice(0, 5).join(", ")}`,
    );
  }
  return addresses;
}

async function api(options: Options, path: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const url = path.startsWith("http") ? path : `${options.url}${path}`;
  let res: Response;
  try {
    res = await fetch(url, {
      ...init,
      headers: { Authorization: `Bearer ${options.key}`, "Content-Type": "application/json", ...init.headers },
      signal: AbortSignal.timeout(60_000),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (err as Error).message;
    throw new UsageError(`Cannot reach ${new URL(url).origin}: ${why} (is the service running? --url or WALLETID_URL names it)`);
  }
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = { error: text.slice(0, 200) };
  }
  return { status: res.status, body };
}

const fmt = (n: number) => n.toLocaleString("en-US");

/**
 * The estimate of a sample the size the plan allows, scaled to the whole list. Returns the most
 * the job may bill: the estimate's high bound, or every distinct address when there is none.
 */
async function printEstimate(options: Options, unique: string[], log: (line: string) => void): Promise<number> {
  const usage = await api(options, "/api/v1/usage?period=day");
  if (usage.status === 200) {
    const credits = usage.body.data.credits;
    if (credits.unmetered) log("Credits: unmetered account.");
    else log(`Credits available: ${fmt(credits.available)} (a job may hold up to ${fmt(credits.available * 10)} addresses).`);
  }
  if (unique.length < 10) {
    log("Estimate: skipped (fewer than 10 distinct addresses).");
    return unique.length;
  }
  const max = typeof usage.body?.data?.plan_limits?.max_batch_size === "number" ? usage.body.data.plan_limits.max_batch_size : 50;
  const sample = unique.length <= max ? unique : Array.from({ length: max }, (_, i) => unique[Math.floor((i * unique.length) / max)]);
  const res = await api(options, "/api/v1/estimate", { method: "POST", body: JSON.stringify({ wallets: sample }) });
  if (res.status !== 200) {
    log(`Estimate unavailable: ${res.body?.error ?? `HTTP ${res.status}`}.`);
    return unique.length;
  }
  const d = res.body.data;
  const scale = unique.length / sample.length;
  const s = (n: number) => fmt(Math.round(n * scale));
  const basis = scale === 1 ? "" : ` (from a sample of ${fmt(sample.length)}, scaled)`;
  log(
    `Estimate${basis}: ${s(d.in_index)} in the index, ${s(d.previously_checked_empty)} checked empty, ${s(d.never_checked)} never checked; ` +
      `would bill about ${s(d.would_bill_estimate.low)} to ${s(d.would_bill_estimate.high)} credits.`,
  );
  return Math.min(unique.length, Math.round(d.would_bill_estimate.high * scale));
}

/** Whether to go ahead with a job that may bill `upTo` credits: asked on a terminal, else --yes. */
async function confirmed(options: Options, upTo: number, log: (line: string) => void): Promise<boolean> {
  if (options.yes || upTo <= options.confirmAbove) return true;
  const question = `The job may bill up to ${fmt(upTo)} credits (over --confirm-above ${fmt(options.confirmAbove)}).`;
  if (!process.stdin.isTTY || options.file === "-") {
    log(`${question} Not submitted: pass --yes to go ahead, or --dry-run to see the estimate only.`);
    return false;
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} Submit it? [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

function progressReporter(stream: NodeJS.WriteStream) {
  let last = "";
  return {
    update(p: { processed: number; total: number; stage: string | null }, status: string) {
      const pct = p.total > 0 ? Math.floor((100 * p.processed) / p.total) : 0;
      const tail = `${fmt(p.processed)}/${fmt(p.total)} ${status}${p.stage ? ` (${p.stage})` : ""}`;
      if (stream.isTTY) {
        const width = 30;
        const filled = Math.round((width * pct) / 100);
        stream.write(`\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${String(pct).padStart(3)}% ${tail}\x1b[K`);
      } else {
        const line = `progress ${pct}% ${tail}`;
        if (line !== last) stream.write(`${line}\n`);
        last = line;
      }
    },
    done() {
      if (stream.isTTY) stream.write("\n");
    },
  };
}

const CSV_COLUMNS = [
  "wallet", "found", "ens_name", "twitter", "twitter_verified", "twitter_reachability",
  "farcaster", "farcaster_fid", "farcaster_followers", "lens", "github", "sources",
];

function csvEscape(value: unknown): string {
  const text = value === undefined || value === null ? "" : String(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csvRow(wallet: string, r: any): string {
  const cells = [
    wallet, r ? "true" : "false", r?.ens_name, r?.twitter?.handle, r?.twitter?.verified, r?.twitter?.reachability,
    r?.farcaster?.username, r?.farcaster?.fid, r?.farcaster?.followers, r?.lens, r?.github, r?.sources?.join(" "),
  ];
  return cells.map(csvEscape).join(",");
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const options = readOptions(argv);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const text = options.file === "-" ? readFileSync(0, "utf8") : readFileSync(options.file, "utf8");
  const addresses = readAddresses(text, options.column);
  const unique = [...new Set(addresses.map((a) => a.toLowerCase()))];
  log(`Read ${fmt(addresses.length)} addresses (${fmt(unique.length)} distinct).`);
  const upTo = await printEstimate(options, unique, log);
  if (options.dryRun) {
    log("Dry run: nothing submitted, nothing billed.");
    return 0;
  }
  if (!(await confirmed(options, upTo, log))) return 1;

  const sub = await api(options, "/api/v1/jobs", { method: "POST", body: JSON.stringify({ wallets: unique }) });
  if (sub.status !== 202) {
    log(`Cannot submit the job: ${sub.body?.error ?? `HTTP ${sub.status}`}`);
    return 1;
  }
  // the server this client talks to, rather than status_url: the same job behind whatever
  // address --url reaches (a tunnel, a proxy), where PUBLIC_URL may name another
  const statusUrl = `${options.url}/api/v1/jobs/${sub.body.data.job_id}`;
  log(`Submitted job ${sub.body.data.job_id} (${fmt(sub.body.data.wallets)} wallets).`);

  const progress = progressReporter(process.stderr);
  let job: any;
  for (;;) {
    const res = await api(options, statusUrl);
    if (res.status !== 200) {
      progress.done();
      log(`Cannot read the job: ${res.body?.error ?? `HTTP ${res.status}`}`);
      return 1;
    }
    job = res.body;
    progress.update(job.data.progress, job.data.status);
    if (job.data.status === "completed" || job.data.status === "failed") break;
    await new Promise((r) => setTimeout(r, options.intervalMs));
  }
  progress.done();
  if (job.data.status === "failed") {
    log(job.data.error);
    return 1;
  }

  const out = options.out ? createWriteStream(options.out) : process.stdout;
  const write = (line: string) => new Promise<void>((resolve) => (out.write(`${line}\n`) ? resolve() : out.once("drain", () => resolve())));
  if (options.format === "csv") await write(CSV_COLUMNS.join(","));
  let found = 0;
  let offset: number | null = 0;
  while (offset !== null) {
    const page: { status: number; body: any } =
      offset === 0 ? { status: 200, body: job } : await api(options, `${statusUrl}?offset=${offset}`);
    if (page.status !== 200) {
      log(`Cannot read results at offset ${offset}: ${page.body?.error ?? `HTTP ${page.status}`}`);
      return 1;
    }
    const body = page.body;
    for (const [i, wallet] of (body.data.wallets as string[]).entries()) {
      const r = body.data.results[i];
      if (r) found++;
      await write(options.format === "csv" ? csvRow(wallet, r) : JSON.stringify(r ? { found: true, ...r } : { wallet, found: false }));
    }
    offset = body.meta.next_offset;
  }
  if (options.out) await new Promise<void>((resolve) => (out as ReturnType<typeof createWriteStream>).end(() => resolve()));
  log(
    `Done: ${fmt(job.meta.requested)} wallets, ${fmt(found)} found, ${fmt(job.meta.matched)} matched (billed)` +
      (options.out ? `; wrote ${options.out} (${options.format}).` : "."),
  );
  return 0;
}

// a reader that stops early (| head) closes the pipe: end quietly, as other command-line tools do
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(0);
  throw err;
});

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err instanceof UsageError || err.message.startsWith("Cannot") ? err.message : `Cannot resolve: ${err.message}`);
    process.exit(1);
  },
);
