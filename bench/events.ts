// The events case (npm run bench -- --case events): what watching costs an import, and how fast
// the delivery loop sends the events it makes. On a PostgreSQL database of its own, in rounds:
// (a) an import of 100,000 NDJSON lines of new wallets nobody watches; (b) the same size of import
// where 10,000 of its wallets are watched (through REST, so snapshots exist), then the delivery loop
// (the real Outbound) to a local receiver until every event arrived. Targets: (b) >= 0.8 of (a) in
// lines/s, and >= 1,000 events/s from the import's commit to the last distinct webhook-id received.
import { serve } from "@hono/node-server";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import postgres from "postgres";
import { createApp, type App } from "../src/app.ts";
import { readConfig } from "../src/config.ts";
import { openDatabase } from "../src/db/open.ts";
import type { Db } from "../src/db/types.ts";
import { useBodySource } from "../src/http/body.ts";
import { importObservations } from "../src/index/import.ts";
import { readNodeBody, rememberIncoming } from "../src/node-body.ts";
import { createNodeOutbound } from "../src/outbound-node.ts";
import { createDeliverer } from "../src/webhooks/deliver.ts";
import { createBenchAccounts } from "./accounts.ts";

export interface EventsCaseOptions {
  serverUrl: string;
  database: string;
  rounds: number;
  /** Lines of each import (one new wallet a line). */
  lines: number;
  /** Wallets of import (b) that are watched. */
  watched: number;
  /** The delivery loop's limit of one endpoint's attempts in flight (its default when absent). */
  perEndpoint?: number;
  log: (line: string) => void;
}

export interface EventsRound {
  order: "a,b" | "b,a";
  unwatchedLinesPerSecond: number;
  watchedLinesPerSecond: number;
  ratio: number;
  events: number;
  deliverySeconds: number;
  eventsPerSecond: number;
  /** CPU of this process (delivery loop and receiver) over the delivery, ms per 1,000 events. */
  cpuMsPerThousandEvents: number;
}

export interface EventsCaseReport {
  lines: number;
  watched: number;
  rounds: EventsRound[];
  targets: Array<{ name: string; value: string; met: boolean }>;
}

const wallet = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

async function freshDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = postgres(`${serverUrl}/postgres`, { max: 1, onnotice: () => {} });
  await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.unsafe(`CREATE DATABASE "${name}"`);
  await admin.end();
  return `${serverUrl}/${name}`;
}

/** A webhook receiver on 127.0.0.1 answering 200, counting distinct webhook-id values. */
async function startReceiver() {
  const ids = new Set<string>();
  let withheld = 0;
  let waiter: { n: number; resolve: () => void } | undefined;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const id = req.headers["webhook-id"];
      if (typeof id === "string" && !ids.has(id)) {
        ids.add(id);
        if ((JSON.parse(Buffer.concat(chunks).toString("utf8")) as { data?: { withheld?: boolean } }).data?.withheld) withheld++;
      }
      res.writeHead(200).end("ok");
      if (waiter && ids.size >= waiter.n) waiter.resolve();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    ids,
    withheld: () => withheld,
    waitFor(n: number, ms: number) {
      if (ids.size >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the receiver got ${ids.size} of ${n} events in ${ms / 1000} s`)), ms);
        waiter = { n, resolve: () => (clearTimeout(timer), resolve()) };
      });
    },
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

function lines(from: number, count: number, tag: string): string[] {
  return Array.from({ length: count }, (_, i) => JSON.stringify({ wallet: wallet(from + i), kind: "twitter", route: "x-signin", handle: `${tag}${from + i}` }));
}

async function timedImport(db: Db, ndjson: string[]): Promise<number> {
  const t0 = performance.now();
  const counts = await importObservations(db, ndjson, { now: new Date() });
  const seconds = (performance.now() - t0) / 1000;
  if (counts.wallets_added !== ndjson.length) throw new Error(`the import added ${counts.wallets_added} wallets of ${ndjson.length}`);
  return ndjson.length / seconds;
}

export async function runEventsCase(o: EventsCaseOptions): Promise<EventsCaseReport> {
  const databaseUrl = await freshDatabase(o.serverUrl, `${o.database}_events`);
  const db = await openDatabase({ databaseUrl, max: 4 });
  const config = readConfig({ DATABASE_URL: databaseUrl, STALE_AFTER_DAYS: "30" });
  const outbound = createNodeOutbound({ allowHosts: ["127.0.0.1"] });
  const receiver = await startReceiver();
  // Each import starts from the same state: the tables vacuumed and analyzed, the dirty pages of
  // the import before it written out. Otherwise the second import of a round pays for the first's
  // autovacuum and checkpoint on the shared cores, and the order, not watching, decides the ratio.
  const admin = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const settle = async () => {
    await admin.unsafe("VACUUM (ANALYZE)");
    await admin.unsafe("CHECKPOINT");
  };
  let app: App | undefined;
  let http: ReturnType<typeof serve> | undefined;
  try {
    const [account] = await createBenchAccounts(db, 1, new Date());
    app = createApp({ db, config, outbound, log: (line) => o.log(`server: ${line}`) });
    useBodySource(readNodeBody);
    const served = app;
    http = serve({ fetch: (req, env) => (rememberIncoming(req, env), served.fetch(req, env)), port: 0, hostname: "127.0.0.1" });
    await new Promise<void>((resolve) => http!.once("listening", () => resolve()));
    const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}/api/v1`;
    const call = async (path: string, body: unknown) => {
      const res = await fetch(base + path, { method: "POST", headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" }, body: JSON.stringify(body) });
      if (res.status >= 300) throw new Error(`POST ${path} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    };
    await call("/webhooks", { url: receiver.url, events: ["wallet.changed"] });
    o.log(`Events: ${o.rounds} rounds of two imports of ${o.lines} new wallets each, (b) with ${o.watched} of them watched; one endpoint at ${receiver.url}.`);

    const rounds: EventsRound[] = [];
    let next = 1;
    for (let r = 0; r < o.rounds; r++) {
      const order = r % 2 === 0 ? "a,b" : "b,a";
      const a = lines(next, o.lines, "a");
      next += o.lines;
      const bFrom = next;
      const b = lines(bFrom, o.lines, "b");
      next += o.lines;
      // watch every tenth wallet of (b), a REST request of 1,000 at a time, before either import
      const watched = Array.from({ length: o.watched }, (_, i) => wallet(bFrom + Math.floor((i * o.lines) / o.watched)));
      for (let i = 0; i < watched.length; i += 1000) await call("/watchlist", { wallets: watched.slice(i, i + 1000) });

      let unwatched = 0;
      let delivery = { seconds: 0, events: 0, cpuMicros: 0 };
      const runA = async () => {
        await settle();
        unwatched = await timedImport(db, a);
      };
      const runB = async () => {
        const before = receiver.ids.size;
        await settle();
        const rate = await timedImport(db, b);
        const committed = performance.now();
        const cpu = process.cpuUsage();
        const [{ events }] = await db.query<{ events: number }>(
          "SELECT count(*)::int AS events FROM webhook_deliveries WHERE status = 'pending'",
        );
        const loop = createDeliverer({ db, config, outbound, now: () => new Date(), log: (line) => o.log(`delivery: ${line}`), perEndpoint: o.perEndpoint });
        await loop.start();
        try {
          await receiver.waitFor(before + events, 300_000);
        } finally {
          await loop.stop();
        }
        const used = process.cpuUsage(cpu);
        delivery = { seconds: (performance.now() - committed) / 1000, events, cpuMicros: used.user + used.system };
        return rate;
      };
      let watchedRate: number;
      if (order === "a,b") {
        await runA();
        watchedRate = await runB();
      } else {
        watchedRate = await runB();
        await runA();
      }
      const round: EventsRound = {
        order,
        unwatchedLinesPerSecond: unwatched,
        watchedLinesPerSecond: watchedRate,
        ratio: watchedRate / unwatched,
        events: delivery.events,
        deliverySeconds: delivery.seconds,
        eventsPerSecond: delivery.events / delivery.seconds,
        cpuMsPerThousandEvents: delivery.cpuMicros / delivery.events,
      };
      if (round.events !== o.watched) throw new Error(`import (b) made ${round.events} events for ${o.watched} watched wallets`);
      rounds.push(round);
      o.log(
        `Round ${r + 1} (${order}): (a) ${unwatched.toFixed(0)} lines/s, (b) ${watchedRate.toFixed(0)} lines/s, ratio ${round.ratio.toFixed(2)}; ` +
          `${round.events} events delivered in ${round.deliverySeconds.toFixed(2)} s: ${round.eventsPerSecond.toFixed(0)} events/s`,
      );
    }
    if (receiver.withheld() > 0) throw new Error(`${receiver.withheld()} events were withheld: the bench account ran out of credits`);

    const ratio = median(rounds.map((r) => r.ratio));
    const rate = median(rounds.map((r) => r.eventsPerSecond));
    return {
      lines: o.lines,
      watched: o.watched,
      rounds,
      targets: [
        { name: "import with watched wallets >= 0.8 of the same unwatched (median of rounds)", value: ratio.toFixed(2), met: ratio >= 0.8 },
        { name: "all events delivered at >= 1,000 events/s (median of rounds)", value: `${rate.toFixed(0)} events/s`, met: rate >= 1000 },
      ],
    };
  } finally {
    if (http) await new Promise<void>((resolve) => http!.close(() => resolve()));
    await app?.close();
    await receiver.close();
    await outbound.close();
    await admin.end();
    await db.close();
  }
}

export function printEventsReport(r: EventsCaseReport, log: (line: string) => void): void {
  log("");
  log(`| round | order | (a) unwatched lines/s | (b) ${r.watched} watched lines/s | b / a | events | delivery s | events/s | CPU ms / 1,000 events |`);
  log("|---|---|---|---|---|---|---|---|---|");
  r.rounds.forEach((x, i) =>
    log(
      `| ${i + 1} | ${x.order} | ${x.unwatchedLinesPerSecond.toFixed(0)} | ${x.watchedLinesPerSecond.toFixed(0)} | ${x.ratio.toFixed(2)} | ${x.events} | ${x.deliverySeconds.toFixed(2)} | ${x.eventsPerSecond.toFixed(0)} | ${x.cpuMsPerThousandEvents.toFixed(0)} |`,
    ),
  );
  log("");
  for (const t of r.targets) log(`${t.met ? "met   " : "MISSED"} ${t.name}: ${t.value}`);
}
