// What npm run bench prints: the cases side by side with their CPU time per request, the ratios
// between them, and the acceptance targets, each marked met or missed.

/** One measured window of one case. */
export interface RoundFigures {
  rps: number;
  /** Seconds the load ran (autocannon's own clock); absent where the driver does not say. */
  elapsedSeconds?: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Non-2xx answers, connection errors and timeouts. */
  failed: number;
  statusCodes: Record<string, number>;
  serverMicros: number | null;
  postgresMicros: number | null;
}

export interface CaseSummary {
  id: string;
  label: string;
  /** Concurrent callers. */
  connections: number;
  /** Median over the rounds. */
  rps: number;
  walletsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  failed: number;
  /** CPU time over all rounds divided by the requests of all rounds (null without /proc). */
  serverMicrosPerRequest: number | null;
  postgresMicrosPerRequest: number | null;
  rounds: RoundFigures[];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function perRequest(rounds: RoundFigures[], pick: (r: RoundFigures) => number | null): number | null {
  const requests = rounds.reduce((n, r) => n + r.requests, 0);
  const values = rounds.map(pick);
  if (requests === 0 || values.some((v) => v === null)) return null;
  return (values as number[]).reduce((a, b) => a + b, 0) / requests;
}

export function summarizeCase(c: { id: string; label: string; connections: number; walletsPerRequest: number }, rounds: RoundFigures[]): CaseSummary {
  const rps = median(rounds.map((r) => r.rps));
  return {
    id: c.id,
    label: c.label,
    connections: c.connections,
    rps,
    walletsPerSecond: rps * c.walletsPerRequest,
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: median(rounds.map((r) => r.p99Ms)),
    requests: rounds.reduce((n, r) => n + r.requests, 0),
    failed: rounds.reduce((n, r) => n + r.failed, 0),
    serverMicrosPerRequest: perRequest(rounds, (r) => r.serverMicros),
    postgresMicrosPerRequest: perRequest(rounds, (r) => r.postgresMicros),
    rounds,
  };
}

/** Server and PostgreSQL CPU per request together, or null when either is unknown. */
export function cpuPerRequest(c: CaseSummary): number | null {
  return c.serverMicrosPerRequest === null || c.postgresMicrosPerRequest === null ? null : c.serverMicrosPerRequest + c.postgresMicrosPerRequest;
}

export interface Ratio {
  /** a's median req/s over b's. */
  byRate: number;
  /** b's CPU per request over a's: the rate ratio if CPU were all that limited both. */
  byCpu: number | null;
}

export function ratioOf(a: CaseSummary, b: CaseSummary): Ratio {
  const cpuA = cpuPerRequest(a);
  const cpuB = cpuPerRequest(b);
  return { byRate: a.rps / b.rps, byCpu: cpuA === null || cpuB === null || cpuA === 0 ? null : cpuB / cpuA };
}

const fixed = (x: number, digits = 0) => x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const micros = (x: number | null) => (x === null ? "n/a" : fixed(x));

export function formatRatio(r: Ratio): string {
  return `${r.byRate.toFixed(2)} by req/s, ${r.byCpu === null ? "n/a" : r.byCpu.toFixed(2)} by CPU per request`;
}

function printColumns(header: string[], rows: string[][], leftAligned: number[], log: (line: string) => void): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (leftAligned.includes(i) ? cell.padEnd(widths[i]) : cell.padStart(widths[i])))
      .join("  ")
      .trimEnd();
  log(line(header));
  log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of rows) log(line(row));
}

export function printCaseTable(cases: CaseSummary[], log: (line: string) => void): void {
  const header = ["case", "conns", "req/s", "wallets/s", "p50 ms", "p99 ms", "server µs/req", "PG µs/req", "failed", "req/s by round"];
  const rows = cases.map((c) => [
    c.label,
    String(c.connections),
    fixed(c.rps),
    fixed(c.walletsPerSecond),
    c.p50Ms.toFixed(1),
    c.p99Ms.toFixed(1),
    micros(c.serverMicrosPerRequest),
    micros(c.postgresMicrosPerRequest),
    String(c.failed),
    c.rounds.map((r) => fixed(r.rps)).join(", "),
  ]);
  printColumns(header, rows, [0, header.length - 1], log);
}

export const TARGETS = {
  meteredOverBaseline: 0.8,
  meteredOverBare: 0.6,
  manyAccountsOverOne: 0.9,
  batch200P50Ms: 25,
  reverseP99Ms: 20,
  jobWalletsPerSecond: 10_000,
  jobWorkerPeakMb: 200,
  mcpOverRest: 0.5,
  observabilityCost: 0.05,
};

export interface TargetCheck {
  target: string;
  measured: string;
  /** null when the case was not run. */
  met: boolean | null;
}

export interface TargetFigures {
  cases: Record<string, CaseSummary | undefined>;
  mcp?: { ratio: number };
  job?: { walletsPerSecond: number; workerPeakRssMb: number | null };
  /** Groups whose case failed: their targets are missed. */
  failed?: string[];
}

/** The acceptance targets from the figures of one run; a case that was not run is null. */
export function checkTargets(figures: TargetFigures): TargetCheck[] {
  const { cases, mcp, job, failed = [] } = figures;
  const t = TARGETS;
  const check = <T>(target: string, value: T | null | undefined, met: (v: T) => boolean, show: (v: T) => string): TargetCheck =>
    value === undefined
      ? { target, measured: "not run", met: null }
      : value === null
        ? { target, measured: "unknown", met: false }
        : { target, measured: show(value), met: met(value) };
  const ofGroup = (name: string, c: TargetCheck): TargetCheck => (failed.includes(name) ? { target: c.target, measured: "failed", met: false } : c);
  const ratio = (a: string, b: string) => {
    const [x, y] = [cases[a], cases[b]];
    return x && y ? ratioOf(x, y) : undefined;
  };
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  const cost = (x: number | null) => (x === null ? "n/a" : `${((1 - x) * 100).toFixed(1)}%`);
  return [
    check(`metered single >= ${t.meteredOverBaseline} of baseline`, ratio("metered", "baseline"), (r) => r.byRate >= t.meteredOverBaseline, formatRatio),
    check(`metered single >= ${t.meteredOverBare} of bare`, ratio("metered", "bare"), (r) => r.byRate >= t.meteredOverBare, formatRatio),
    check(`100 accounts >= ${t.manyAccountsOverOne} of 1 account`, ratio("metered-accounts", "metered"), (r) => r.byRate >= t.manyAccountsOverOne, formatRatio),
    check(`batch of 200 p50 < ${t.batch200P50Ms} ms (1 connection)`, cases["batch-200-alone"]?.p50Ms, (v) => v < t.batch200P50Ms, ms),
    check(`reverse page p99 < ${t.reverseP99Ms} ms (1 client)`, cases["reverse-1"]?.p99Ms, (v) => v < t.reverseP99Ms, ms),
    ofGroup("job", check(`job >= ${fixed(t.jobWalletsPerSecond)} wallets/s`, job?.walletsPerSecond, (v) => v >= t.jobWalletsPerSecond, (v) => `${fixed(v)} wallets/s`)),
    ofGroup("job", check(`job worker peak < ${t.jobWorkerPeakMb} MB`, job ? job.workerPeakRssMb : undefined, (v) => v < t.jobWorkerPeakMb, (v) => `${v.toFixed(1)} MB`)),
    ofGroup("mcp", check(`MCP >= ${t.mcpOverRest} of REST`, mcp?.ratio, (v) => v >= t.mcpOverRest, (v) => v.toFixed(2))),
    check(
      `access log and metrics cost <= ${t.observabilityCost * 100}%`,
      ratio("metered-observed", "metered-quiet"),
      (r) => 1 - r.byRate <= t.observabilityCost,
      (r) => `${cost(r.byRate)} by req/s, ${cost(r.byCpu)} by CPU per request`,
    ),
  ];
}

export function printTargets(checks: TargetCheck[], log: (line: string) => void): void {
  const verdict = (met: boolean | null) => (met === null ? "-" : met ? "met" : "MISSED");
  printColumns(
    ["target", "measured", "result"],
    checks.map((c) => [c.target, c.measured, verdict(c.met)]),
    [0, 1, 2],
    log,
  );
}
