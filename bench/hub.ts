// The hub case (npm run bench -- --case hub): filling an index from a local fake Farcaster hub
// (test/support/fake-hub.ts, in this process) on a PostgreSQL database of its own. Three phases:
// `admin ingest farcaster` backfilling --hub-fids fids with 1 to 3 verifications each; the admin
// follower applying --hub-events events; then a server with FARCASTER_HUB_URL following while
// events arrive a few a second, each timed from its append to the first lookup that answers it.
// Targets: backfill >= 1,000 fids/s, follow >= 2,000 events/s, effect visible within 2 s at p99.
import { spawn } from "node:child_process";
import process from "node:process";
import postgres from "postgres";
import { openDatabase } from "../src/db/open.ts";
import type { Db } from "../src/db/types.ts";
import { readSync } from "../src/hub/store.ts";
import { startFakeHub, type FakeHub } from "../test/support/fake-hub.ts";
import { createBenchAccounts } from "./accounts.ts";
import { processCpuMicros } from "./cpu.ts";
import { ROOT, sleep, startServer, type ChildServer } from "./servers.ts";

export interface HubCaseOptions {
  serverUrl: string;
  database: string;
  fids: number;
  events: number;
  concurrency: number;
  /** Seconds of the latency phase. */
  latencySeconds: number;
  log: (line: string) => void;
}

export interface HubCaseReport {
  fids: number;
  addresses: number;
  backfillSeconds: number;
  fidsPerSecond: number;
  backfillRequests: number;
  backfillCpuMsPerThousandFids: number | undefined;
  rows: { links: number; wallets: number; farcasterAccounts: number; reverseEntries: number };
  diskMB: number;
  events: number;
  followSeconds: number;
  eventsPerSecond: number;
  latency: { count: number; p50Ms: number; p99Ms: number; maxMs: number };
  targets: Array<{ name: string; value: string; met: boolean }>;
}

const wallet = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;

/** Runs `admin ingest farcaster` to its end (or until `until` says stop, then SIGTERM); its JSON, time and CPU. */
async function runAdmin(args: string[], env: Record<string, string>, until?: () => Promise<boolean>) {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/admin.ts", "ingest", "farcaster", ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let cpu: number | undefined;
  const sample = setInterval(() => (cpu = processCpuMicros(child.pid!) ?? cpu), 100);
  if (until) {
    while (child.exitCode === null && !(await until())) await sleep(20);
    cpu = processCpuMicros(child.pid!) ?? cpu;
    child.kill("SIGTERM");
  }
  const code = await exited;
  clearInterval(sample);
  if (code !== 0) throw new Error(`admin ingest farcaster exited ${code}: ${err.trim().slice(-2000)}`);
  return { result: JSON.parse(out) as { fids: number; addresses: number; observations: number; last_event_id: string }, cpuMicros: cpu };
}

async function freshDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = postgres(`${serverUrl}/postgres`, { max: 1, onnotice: () => {} });
  await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.unsafe(`CREATE DATABASE "${name}"`);
  await admin.end();
  return `${serverUrl}/${name}`;
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export async function runHubCase(o: HubCaseOptions): Promise<HubCaseReport> {
  const databaseUrl = await freshDatabase(o.serverUrl, `${o.database}_hub`);
  const db: Db = await openDatabase({ databaseUrl, max: 2 });
  let hub: FakeHub | undefined;
  let server: ChildServer | undefined;
  try {
    hub = await startFakeHub({ numShards: 2, fidsPageSize: 1000, eventsPageSize: 1000 });
    let addresses = 0;
    for (let fid = 1; fid <= o.fids; fid++) {
      const n = 1 + (fid % 3);
      hub.seed(fid, { username: `bench${fid}`, addresses: Array.from({ length: n }, (_, k) => wallet(fid * 4 + k)), followers: fid % 50 });
      addresses += n;
    }
    for (let i = 0; i < 100; i++) hub.addCast(1);
    o.log(`Hub: a fake hub of ${o.fids} fids (${addresses} verified addresses) over 2 shards; backfilling with --concurrency ${o.concurrency}.`);

    const env = { DATABASE_URL: databaseUrl, HUB_POLL_MS: "200" };
    const requestsBefore = [...hub.requests.values()].reduce((a, b) => a + b, 0);
    const t0 = performance.now();
    const backfill = await runAdmin(["--hub", hub.url, "--concurrency", String(o.concurrency)], env);
    const backfillSeconds = (performance.now() - t0) / 1000;
    const backfillRequests = [...hub.requests.values()].reduce((a, b) => a + b, 0) - requestsBefore;
    const [rows] = await db.query<Record<string, string>>(
      `SELECT (SELECT count(*) FROM links) AS links, (SELECT count(*) FROM wallets) AS wallets,
              (SELECT count(*) FROM farcaster_accounts) AS accounts, (SELECT count(*) FROM reverse_entries) AS reverse,
              (SELECT sum(pg_total_relation_size(t))::float8 / 1048576 FROM unnest(ARRAY['links', 'wallets', 'farcaster_accounts', 'reverse_entries', 'reverse_counts']::regclass[]) AS t) AS mb`,
    );
    o.log(`Backfill: ${backfill.result.fids} fids, ${backfill.result.addresses} addresses in ${backfillSeconds.toFixed(1)} s (process start included): ${(backfill.result.fids / backfillSeconds).toFixed(0)} fids/s, ${backfillRequests} hub requests, ${Number(rows.mb).toFixed(1)} MB of index tables.`);

    // the follower: events appended at once (verification adds and removes, username changes, casts)
    for (let i = 0; i < o.events; i++) {
      const fid = 1 + ((i * 7919) % o.fids);
      switch (i % 5) {
        case 0:
        case 1:
          hub.addVerification(fid, wallet(o.fids * 4 + 100 + i));
          break;
        case 2:
          hub.removeVerification(fid, wallet(fid * 4));
          break;
        case 3:
          hub.setUsername(fid, `renamed${i}`);
          break;
        default:
          hub.addCast(fid);
      }
    }
    const head = hub.headEventId;
    let firstEventsAt: number | undefined;
    hub.onRequest = (path) => void (path === "/v1/events" && (firstEventsAt ??= performance.now()));
    const follow = await runAdmin(["--hub", hub.url, "--follow"], env, async () => (await readSync(db)).lastEventId === head);
    const followSeconds = (performance.now() - (firstEventsAt ?? performance.now())) / 1000;
    hub.onRequest = undefined;
    o.log(`Follow: ${o.events} events to event ${follow.result.last_event_id} in ${followSeconds.toFixed(2)} s: ${(o.events / followSeconds).toFixed(0)} events/s.`);

    // the server follows; events arrive ~10 a second, each timed until a lookup answers it
    const [account] = await createBenchAccounts(db, 1, new Date());
    server = await startServer("hub-follower", "src/main.ts", { DATABASE_URL: databaseUrl, WORKER: "0", FARCASTER_HUB_URL: hub.url }, { retryForMs: 0, log: o.log });
    await waitFollowing(db);
    const latencies: number[] = [];
    const pending: Promise<void>[] = [];
    const endAt = performance.now() + o.latencySeconds * 1000;
    for (let i = 0; performance.now() < endAt; i++) {
      const address = wallet(o.fids * 4 + 1_000_000 + i);
      const fid = 1 + ((i * 104729) % o.fids);
      const appended = performance.now();
      hub.addVerification(fid, address);
      pending.push(
        (async () => {
          for (;;) {
            const res = await fetch(`${server!.url}/api/v1/wallet/${address}`, { headers: { authorization: `Bearer ${account.apiKey}` } });
            const body = (await res.json()) as { data?: { farcaster?: unknown } | null };
            if (body.data?.farcaster) break;
            if (performance.now() - appended > 30_000) throw new Error(`the event for ${address} was not answered in 30 s`);
            await sleep(25);
          }
          latencies.push(performance.now() - appended);
        })(),
      );
      await sleep(100);
    }
    await Promise.all(pending);
    latencies.sort((a, b) => a - b);
    const latency = { count: latencies.length, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), maxMs: latencies.at(-1) ?? NaN };
    o.log(`Latency (server with FARCASTER_HUB_URL, HUB_POLL_MS default): ${latency.count} events, p50 ${latency.p50Ms.toFixed(0)} ms, p99 ${latency.p99Ms.toFixed(0)} ms, max ${latency.maxMs.toFixed(0)} ms from append to answer.`);

    const fidsPerSecond = backfill.result.fids / backfillSeconds;
    const eventsPerSecond = o.events / followSeconds;
    return {
      fids: backfill.result.fids,
      addresses: backfill.result.addresses,
      backfillSeconds,
      fidsPerSecond,
      backfillRequests,
      backfillCpuMsPerThousandFids: backfill.cpuMicros === undefined ? undefined : backfill.cpuMicros / backfill.result.fids,
      rows: { links: Number(rows.links), wallets: Number(rows.wallets), farcasterAccounts: Number(rows.accounts), reverseEntries: Number(rows.reverse) },
      diskMB: Number(rows.mb),
      events: o.events,
      followSeconds,
      eventsPerSecond,
      latency,
      targets: [
        { name: "backfill >= 1,000 fids/s", value: `${fidsPerSecond.toFixed(0)} fids/s`, met: fidsPerSecond >= 1000 },
        { name: "follow >= 2,000 events/s", value: `${eventsPerSecond.toFixed(0)} events/s`, met: eventsPerSecond >= 2000 },
        { name: "lookup answers an event's effect within 2 s at p99", value: `${latency.p99Ms.toFixed(0)} ms`, met: latency.p99Ms <= 2000 },
      ],
    };
  } finally {
    await server?.stop();
    await hub?.close();
    await db.close();
  }
}

async function waitFollowing(db: Db): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const s = await readSync(db);
    if (s.holder !== null && s.backfillDoneAt !== null) return;
    await sleep(50);
  }
  throw new Error("the server did not start following the hub within 60 s");
}

export function printHubReport(r: HubCaseReport, log: (line: string) => void): void {
  log("");
  log("| hub case | figure |");
  log("|---|---|");
  log(`| backfill | ${r.fids} fids, ${r.addresses} addresses in ${r.backfillSeconds.toFixed(1)} s: ${r.fidsPerSecond.toFixed(0)} fids/s |`);
  log(`| backfill hub requests | ${r.backfillRequests} (${(r.backfillRequests / r.fids).toFixed(2)} a fid) |`);
  if (r.backfillCpuMsPerThousandFids !== undefined) log(`| backfill CPU (admin process) | ${r.backfillCpuMsPerThousandFids.toFixed(0)} ms per 1,000 fids |`);
  log(`| rows | ${r.rows.links} links, ${r.rows.wallets} wallets, ${r.rows.farcasterAccounts} accounts, ${r.rows.reverseEntries} reverse entries |`);
  log(`| index tables on disk | ${r.diskMB.toFixed(1)} MB |`);
  log(`| follow | ${r.events} events in ${r.followSeconds.toFixed(2)} s: ${r.eventsPerSecond.toFixed(0)} events/s |`);
  log(`| event to lookup | p50 ${r.latency.p50Ms.toFixed(0)} ms, p99 ${r.latency.p99Ms.toFixed(0)} ms, max ${r.latency.maxMs.toFixed(0)} ms (${r.latency.count} events) |`);
  log("");
  for (const t of r.targets) log(`${t.met ? "met   " : "MISSED"} ${t.name}: ${t.value}`);
}
