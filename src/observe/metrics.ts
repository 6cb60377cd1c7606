// Prometheus metrics in the text exposition format 0.0.4, written by a small module of our own
// (prom-client builds on Node's own modules; this runs on Node, Deno and Bun alike). Counters and
// histograms live in the process; gauges read at scrape time come from `collect` callbacks.

type Labels = Record<string, string>;

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function labelText(labels: Labels): string {
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return "";
  return `{${keys.map((k) => `${k}="${escapeLabel(labels[k])}"`).join(",")}}`;
}

/**
 * A series map keyed by the labels' values in the order the caller gave them (cheap, no sorting
 * or escaping on the request path), each key resolved once to the series of its canonical label
 * text, so two call sites naming the same labels in another order still share one series.
 */
class SeriesMap<S> {
  private readonly canonical = new Map<string, S>();
  private readonly fast = new Map<string, S>();

  constructor(private readonly create: (labels: Labels) => S) {}

  get(labels: Labels, create: boolean): S | undefined {
    let key = "";
    for (const k in labels) key += `${k}\u0000${labels[k]}\u0001`;
    let s = this.fast.get(key);
    if (s) return s;
    const text = labelText(labels);
    s = this.canonical.get(text);
    if (!s) {
      if (!create) return undefined;
      s = this.create(labels);
      this.canonical.set(text, s);
    }
    this.fast.set(key, s);
    return s;
  }

  values(): IterableIterator<S> {
    return this.canonical.values();
  }
}

function numberText(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Number.POSITIVE_INFINITY) return "+Inf";
  if (n === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(n);
}

interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  render(): string[];
}

export class Counter {
  private readonly values = new SeriesMap((labels) => ({ labels: { ...labels }, value: 0 }));
  constructor(readonly name: string, readonly help: string) {}

  inc(labels: Labels = {}, by = 1): void {
    this.values.get(labels, true)!.value += by;
  }

  /** Adds one to the series of `labels` when called: for a hot path that names the same labels again and again. */
  series(labels: Labels): () => void {
    const s = this.values.get(labels, true)!;
    return () => {
      s.value++;
    };
  }

  get(labels: Labels = {}): number {
    return this.values.get(labels, false)?.value ?? 0;
  }

  render(): string[] {
    return [...this.values.values()].map((e) => `${this.name}${labelText(e.labels)} ${numberText(e.value)}`);
  }
}

export class Histogram {
  // per series, the observations that fell in each bucket alone (the last slot: above every
  // bound); cumulated when rendered
  private readonly bySeries: SeriesMap<{ labels: Labels; counts: number[]; sum: number; count: number }>;
  constructor(readonly name: string, readonly help: string, readonly buckets: number[]) {
    this.bySeries = new SeriesMap((labels) => ({ labels: { ...labels }, counts: [...buckets.map(() => 0), 0], sum: 0, count: 0 }));
  }

  observe(labels: Labels, value: number): void {
    this.record(this.bySeries.get(labels, true)!, value);
  }

  /** Observes into the series of `labels` when called: for a hot path that names the same labels again and again. */
  series(labels: Labels): (value: number) => void {
    const s = this.bySeries.get(labels, true)!;
    return (value) => this.record(s, value);
  }

  private record(s: { counts: number[]; sum: number; count: number }, value: number): void {
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]) i++;
    s.counts[i]++;
    s.sum += value;
    s.count++;
  }

  render(): string[] {
    const out: string[] = [];
    for (const s of this.bySeries.values()) {
      let below = 0;
      this.buckets.forEach((le, i) => {
        below += s.counts[i];
        out.push(`${this.name}_bucket${labelText({ ...s.labels, le: numberText(le) })} ${below}`);
      });
      out.push(`${this.name}_bucket${labelText({ ...s.labels, le: "+Inf" })} ${s.count}`);
      out.push(`${this.name}_sum${labelText(s.labels)} ${numberText(s.sum)}`);
      out.push(`${this.name}_count${labelText(s.labels)} ${s.count}`);
    }
    return out;
  }
}

/** A gauge family whose samples are read when scraped. */
export interface GaugeSample {
  labels?: Labels;
  value: number;
}

export interface Gauge {
  name: string;
  help: string;
  read: () => Promise<GaugeSample[]> | GaugeSample[];
}

export class Registry {
  private readonly families: Family[] = [];

  counter(name: string, help: string): Counter {
    const c = new Counter(name, help);
    this.families.push({ name, help, type: "counter", render: () => c.render() });
    return c;
  }

  histogram(name: string, help: string, buckets: number[]): Histogram {
    const h = new Histogram(name, help, buckets);
    this.families.push({ name, help, type: "histogram", render: () => h.render() });
    return h;
  }

  /** The exposition, with `gauges` read at this scrape (a failing read leaves its family out). */
  async expose(gauges: Gauge[] = []): Promise<string> {
    const lines: string[] = [];
    for (const f of this.families) {
      lines.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`, ...f.render());
    }
    const read = await Promise.all(gauges.map(async (g) => {
      try {
        return { g, samples: await g.read() };
      } catch {
        return { g, samples: undefined };
      }
    }));
    for (const { g, samples } of read) {
      if (!samples) continue;
      lines.push(`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} gauge`);
      for (const s of samples) lines.push(`${g.name}${labelText(s.labels ?? {})} ${numberText(s.value)}`);
    }
    return `${lines.join("\n")}\n`;
  }
}

/**
 * The process's metrics: what the request path, metering, the job worker and the live sources
 * count. One registry per process; the app adds its scrape-time gauges (jobs, maintenance).
 */
export const metrics = (() => {
  const registry = new Registry();
  return {
    registry,
    requests: registry.counter("walletid_http_requests_total", "HTTP requests by route template, method and status"),
    latency: registry.histogram(
      "walletid_http_request_duration_seconds",
      "HTTP request latency by route template and method",
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    ),
    metering: registry.counter("walletid_metering_outcomes_total", "Metered calls by outcome: ok, unauthorized, rate_limited, no_credits, batch_too_large, replay"),
    billed: registry.counter("walletid_matches_billed_total", "Match credits billed"),
    workerWallets: registry.counter("walletid_worker_wallets_total", "Wallets the job worker processed, by stage"),
    upstream: registry.counter("walletid_upstream_calls_total", "Calls to live sources by source and outcome (ok, error)"),
    webhookAttempts: registry.counter("walletid_webhook_attempts_total", "Webhook delivery attempts by outcome: delivered, failed (retried or given up), gone (410: endpoint disabled)"),
    webhookDeliveries: registry.counter("walletid_webhook_deliveries_total", "Webhook deliveries finished by this process, by outcome: delivered, failed"),
    dbInFlight: { value: 0 },
  };
})();
// a counter without labels is exposed from the start, at 0
metrics.billed.inc({}, 0);
