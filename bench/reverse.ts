// The reverse-lookup cases of npm run bench: clients page a handle held by one wallet in a hundred
// (10,000 of the default index) from the first page to the last, following next_cursor, for pages
// per second and the page latency percentiles, from a process of their own
// (bench/reverse-client.ts). A first walk is checked: every holder once, in order.
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
import process from "node:process";
import type { BenchCase, CaseId } from "./rounds.ts";
import { ROOT, type ChildServer } from "./servers.ts";

export interface ReverseFigures {
  clients: number;
  seconds: number;
  walks: number;
  pages: number;
  pagesPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  failures: number;
}

interface Page {
  wallets: string[];
  ranks: number[];
  total: number;
  next: string | null;
}

async function fetchPage(url: string, apiKey: string, handle: string, cursor: string | null): Promise<Page> {
  const query = cursor ? `?cursor=${encodeURIComponent(cursor)}` : "";
  const res = await fetch(`${url}/api/v1/reverse/twitter/${handle}${query}`, { headers: { Authorization: `Bearer ${apiKey}` } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /reverse/twitter/${handle} answered ${res.status}: ${text.slice(0, 300)}`);
  const body = JSON.parse(text) as {
    data: Array<{ wallet: string; farcaster?: { followers?: number } }>;
    meta: { total_count: number; next_cursor: string | null };
  };
  return {
    wallets: body.data.map((r) => r.wallet),
    ranks: body.data.map((r) => (r.farcaster?.followers === undefined ? 1 : -r.farcaster.followers)),
    total: body.meta.total_count,
    next: body.meta.next_cursor,
  };
}

/** One walk from page one to the end, checking order and completeness: the number of holders; throws on a defect. */
export async function checkReverse({ url, apiKey, handle }: { url: string; apiKey: string; handle: string }): Promise<number> {
  const seen = new Set<string>();
  let previous: [number, string] | undefined;
  let cursor: string | null = null;
  let total = 0;
  do {
    const page = await fetchPage(url, apiKey, handle, cursor);
    total = page.total;
    page.wallets.forEach((wallet, i) => {
      const position: [number, string] = [page.ranks[i], wallet];
      if (seen.has(wallet)) throw new Error(`Reverse paging repeated ${wallet}`);
      if (previous && (position[0] < previous[0] || (position[0] === previous[0] && position[1] <= previous[1]))) {
        throw new Error(`Reverse paging is out of order at ${wallet}`);
      }
      seen.add(wallet);
      previous = position;
    });
    cursor = page.next;
  } while (cursor);
  if (seen.size !== total) throw new Error(`Reverse paging returned ${seen.size} wallets of a total_count of ${total}`);
  return total;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** `clients` callers each page the handle from the first page to the last, again and again, for `seconds`. */
export async function driveReverse(options: {
  url: string;
  apiKey: string;
  handle: string;
  clients: number;
  seconds: number;
}): Promise<ReverseFigures> {
  const latencies: number[] = [];
  let walks = 0;
  let failures = 0;
  const started = performance.now();
  const until = started + options.seconds * 1000;
  await Promise.all(
    Array.from({ length: options.clients }, async () => {
      while (performance.now() < until) {
        let cursor: string | null = null;
        for (;;) {
          const t0 = performance.now();
          try {
            cursor = (await fetchPage(options.url, options.apiKey, options.handle, cursor)).next;
          } catch {
            failures++;
            break;
          }
          latencies.push(performance.now() - t0);
          if (cursor === null) {
            walks++;
            break;
          }
          if (performance.now() >= until) break;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    clients: options.clients,
    seconds: elapsed,
    walks,
    pages: latencies.length,
    pagesPerSecond: latencies.length / elapsed,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1) ?? 0,
    failures,
  };
}

/**
 * driveReverse in a process of its own (bench/reverse-client.ts): this process's heap,
 * grown by autocannon over the lookup cases, made the page latencies it measured include its own
 * major GCs.
 */
async function driveReverseApart(options: { url: string; apiKey: string; handle: string; clients: number; seconds: number }): Promise<ReverseFigures> {
  const args = [options.url, options.apiKey, options.handle, String(options.clients), String(options.seconds)];
  const child = spawn(process.execPath, ["--import", "tsx", "bench/reverse-client.ts", ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  const line = out.trim().split("\n").at(-1);
  if (code !== 0 || !line) throw new Error(`The reverse client exited with ${code}: ${err.trim()}`);
  return JSON.parse(line) as ReverseFigures;
}

/** The reverse cases: one client paging alone (the latency target), and `reverseClients` together. */
export function reverseCases(real: ChildServer, apiKey: string, handle: string, reverseClients: number): BenchCase[] {
  const reverse = (id: CaseId, clients: number): BenchCase => ({
    id,
    label: `reverse pages of 100, ${clients} client${clients === 1 ? "" : "s"}`,
    server: real,
    connections: clients,
    walletsPerRequest: 100,
    drive: async (seconds) => {
      const f = await driveReverseApart({ url: real.url, apiKey, handle, clients, seconds });
      return { rps: f.pagesPerSecond, p50Ms: f.p50Ms, p99Ms: f.p99Ms, requests: f.pages, failed: f.failures, statusCodes: {} };
    },
  });
  return [reverse("reverse-1", 1), reverse("reverse-many", reverseClients)];
}
