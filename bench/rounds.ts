// The bench's rounds: every case once a round after a warm-up of each, every other round in
// reverse order so that the rest of the machine's load falls on all of them alike; a case measures
// its load figures and the CPU time its server and PostgreSQL spent (bench/cpu.ts). Two paired
// cases (the logging comparison) share each round in alternating slices, process by process.
import type { Db } from "../src/db/types.ts";
import { startCpuWindow } from "./cpu.ts";
import { summarizeCase, type CaseSummary, type RoundFigures } from "./report.ts";
import type { ChildServer } from "./servers.ts";

export type CaseId =
  | "bare"
  | "baseline"
  | "metered"
  | "metered-accounts"
  | "batch"
  | "batch-200"
  | "batch-200-alone"
  | "metered-observed"
  | "metered-quiet"
  | "reverse-1"
  | "reverse-many"
  | "metered-before"
  | "batch-before"
  // a case of the scale comparison (bench/scale.ts): the case, @ the index size
  | `${string}@${string}`;

export type Drive = (seconds: number) => Promise<Omit<RoundFigures, "serverMicros" | "postgresMicros">>;

export interface BenchCase {
  id: CaseId;
  label: string;
  /** The server whose process CPU time the case reports. */
  server: ChildServer;
  /** The database whose backends' CPU time the case reports, when not the rounds' own. */
  db?: Db;
  connections: number;
  walletsPerRequest: number;
  drive: Drive;
  /**
   * The case measured with this one in alternating slices of each round, so that both meet the
   * same moments of a shared machine (a 5% difference is below what one 10-second window
   * against the next can tell apart).
   */
  pairedWith?: CaseId;
  /**
   * The same case on several server processes, measured in turn and reported as one; a paired
   * case's replica p runs in the same process as its partner's replica p. Two processes started
   * alike differ by up to 14% in CPU per request for their whole life (measured: four identical
   * servers, 150 to 171 µs), more than the 5% a pair must resolve: compared within each process,
   * that difference falls on both cases alike.
   */
  replicas?: BenchCase[];
}

/** One measured window of a case: its load figures and the CPU time the server and PostgreSQL spent. */
async function measure(db: Db, c: BenchCase, seconds: number): Promise<RoundFigures> {
  const window = await startCpuWindow(c.db ?? db, c.server.pid);
  const figures = await c.drive(seconds);
  return { ...figures, ...(await window.stop()) };
}

/** Slices of each case of a pair, per process and round. */
const PAIR_SLICES = 4;

/**
 * Unmeasured load of each case of a pair before a process's first slice in a round: the process
 * has been idle through the other processes' turns and the other cases (long enough for V8 to
 * shrink its heap). With slices that started cold, servers spent 225 to 320 µs of CPU a request
 * where the metered server, never idle for long, spent 138 in the same run.
 */
const PROCESS_WARMUP_SECONDS = 1;

/**
 * One round of two paired cases whose replicas share processes: process by process, after a
 * warm-up of both, PAIR_SLICES slices of each case of `seconds / (PAIR_SLICES * processes)`,
 * alternating, the first flipping with the process and the round. Per case its requests a second
 * over all its slices, the request-weighted mean of the slices' latency percentiles, and the sums
 * of everything else.
 */
async function measurePair(
  db: Db,
  pair: [BenchCase, BenchCase],
  seconds: number,
  round: number,
): Promise<{ figures: [RoundFigures, RoundFigures]; byProcess: number[] }> {
  const arms = pair.map((c) => c.replicas ?? [c]);
  const processes = Math.min(arms[0].length, arms[1].length);
  // at least 2 s: a slice starts with 32 connections being opened, and autocannon's per-second
  // average of a 1-second run rests on one sample
  const slice = Math.max(2, Math.round(seconds / (PAIR_SLICES * processes)));
  const slices: [RoundFigures[], RoundFigures[]] = [[], []];
  for (let p = 0; p < processes; p++) {
    for (const k of [0, 1]) await arms[k][p].drive(PROCESS_WARMUP_SECONDS);
    for (let i = 0; i < 2 * PAIR_SLICES; i++) {
      const k = (round + p + i) % 2;
      slices[k].push(await measure(db, arms[k][p], slice));
    }
  }
  // each process's own ratio of the first case's req/s to the second's
  const byProcess = Array.from({ length: processes }, (_, p) => {
    const [a, b] = slices.map((all) => combineSlices(all.slice(p * PAIR_SLICES, (p + 1) * PAIR_SLICES)));
    return a.rps / b.rps;
  });
  return { figures: [combineSlices(slices[0]), combineSlices(slices[1])], byProcess };
}

function combineSlices(parts: RoundFigures[]): RoundFigures {
  const requests = parts.reduce((n, p) => n + p.requests, 0);
  const weighted = (f: (p: RoundFigures) => number) => parts.reduce((x, p) => x + f(p) * p.requests, 0) / Math.max(1, requests);
  const total = (f: (p: RoundFigures) => number | null) => (parts.some((p) => f(p) === null) ? null : parts.reduce((x, p) => x + f(p)!, 0));
  const statusCodes: Record<string, number> = {};
  for (const p of parts) for (const [code, n] of Object.entries(p.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  // requests over the seconds the slices ran, pooled: a mean of the slices' own rates would weigh
  // a slice's start (its connections opened) as much in a short slice as in a long one
  const elapsed = parts.every((p) => p.elapsedSeconds !== undefined) ? parts.reduce((x, p) => x + p.elapsedSeconds!, 0) : 0;
  return {
    rps: elapsed > 0 ? requests / elapsed : parts.reduce((x, p) => x + p.rps, 0) / parts.length,
    elapsedSeconds: elapsed > 0 ? elapsed : undefined,
    p50Ms: weighted((p) => p.p50Ms),
    p99Ms: weighted((p) => p.p99Ms),
    requests,
    failed: parts.reduce((n, p) => n + p.failed, 0),
    statusCodes,
    serverMicros: total((p) => p.serverMicros),
    postgresMicros: total((p) => p.postgresMicros),
  };
}

/** The cases in rounds (every other round in reverse order, so no case always follows the same one), after a warm-up of each. */
export async function runRounds(
  db: Db,
  cases: BenchCase[],
  settings: { warmupSeconds: number; rounds: number; durationSeconds: number },
  log: (line: string) => void,
): Promise<CaseSummary[]> {
  const total = cases.length * (settings.warmupSeconds + settings.rounds * settings.durationSeconds);
  log(
    `${cases.length} cases: ${settings.warmupSeconds} s warm-up, then ${settings.rounds} round${settings.rounds === 1 ? "" : "s"} of ${settings.durationSeconds} s each ` +
      `(about ${Math.ceil(total / 60)} min).`,
  );
  if (settings.warmupSeconds > 0) for (const c of cases) for (const r of c.replicas ?? [c]) await r.drive(settings.warmupSeconds);
  const runs = new Map<CaseId, RoundFigures[]>(cases.map((c) => [c.id, []]));
  const micros = (x: number | null, requests: number) => (x === null || requests === 0 ? "n/a" : (x / requests).toFixed(0));
  for (let round = 1; round <= settings.rounds; round++) {
    const measured = new Set<CaseId>();
    for (const c of round % 2 === 1 ? cases : [...cases].reverse()) {
      if (measured.has(c.id)) continue;
      const partner = cases.find((x) => x.id === c.pairedWith);
      let figures: Array<[BenchCase, RoundFigures]>;
      let byProcess: number[] = [];
      if (partner) {
        // in the order the cases are listed: measurePair flips which goes first by itself
        const pair: [BenchCase, BenchCase] = cases.indexOf(c) < cases.indexOf(partner) ? [c, partner] : [partner, c];
        const paired = await measurePair(db, pair, settings.durationSeconds, round);
        figures = paired.figures.map((f, i) => [pair[i], f]);
        byProcess = paired.byProcess;
      } else {
        figures = [[c, await measure(db, c, settings.durationSeconds)]];
      }
      for (const [done, f] of figures) {
        measured.add(done.id);
        runs.get(done.id)!.push(f);
        log(
          `  round ${round}  ${done.label.padEnd(48)} ${f.rps.toFixed(0).padStart(6)} req/s  p50 ${f.p50Ms.toFixed(1)} ms  p99 ${f.p99Ms.toFixed(1)} ms  ` +
            `server ${micros(f.serverMicros, f.requests)} µs/req  PG ${micros(f.postgresMicros, f.requests)} µs/req`,
        );
      }
      if (byProcess.length > 0) log(`  round ${round}  ${figures[0][0].id} / ${figures[1][0].id}, req/s in each process: ${byProcess.map((r) => r.toFixed(3)).join(", ")}`);
    }
  }
  return cases.map((c) => summarizeCase(c, runs.get(c.id)!));
}
