// The reverse-lookup cases of npm run bench: clients page a handle held by 10,000 wallets from
// the first page to the last, following next_cursor, for pages per second and the page latency
// percentiles. A first walk is checked: every holder once, in order.
import { performance } from "node:perf_hooks";

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
