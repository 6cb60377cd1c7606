// The percall case of `npm run bench`: single lookups paid per call over x402 (`upto`, the unmodified
// @x402/fetch client: a 402, then the paid retry that the server verifies, claims, answers and
// settles through the local facilitator in its own process) against key-metered lookups of the
// same wallets on the same server, in alternating windows. Reports calls/s, latency, and where the
// time goes: the CPU per call of the walletid process, of the facilitator and of PostgreSQL,
// i.e. the service's own share beside the facilitator round trips.
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { Db } from "../src/db/types.ts";
import { processCpuMicros, startCpuWindow } from "./cpu.ts";
import { randomWallet } from "./lookup.ts";
import { startFacilitatorProcess } from "./purchase.ts";
import type { ChildServer } from "./servers.ts";

const PAY_TO = "0x5e11e5000000000000000000000000000000a402";
/** Calls one paying wallet makes before the next one takes over: under the Developer preset's 60 a minute. */
const CALLS_PER_WALLET = 50;

export interface PercallWindow {
  mode: "paid" | "key";
  calls: number;
  seconds: number;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  failures: number;
  /** Paid calls that billed a match (settled); the rest were misses (nothing settled). */
  settled: number;
  /**
   * From the server's Server-Timing on both responses of a paid call (the 402 and the paid
   * retry): milliseconds of the service's own wall time, and of its round trips to the facilitator, a call.
   */
  serviceMsPerCall: number | undefined;
  /** Of serviceMsPerCall, the 402 challenge's share. */
  challengeMsPerCall: number | undefined;
  facilitatorWaitMsPerCall: number | undefined;
  serverCpuMsPerCall: number | undefined;
  facilitatorCpuMsPerCall: number | undefined;
  postgresCpuMsPerCall: number | undefined;
}

export interface PercallReport {
  clients: number;
  windows: PercallWindow[];
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Server-Timing totals of the responses a paying client received; `challenge`: the service's own time on the 402s alone. */
const serverTiming = { service: 0, facilitator: 0, challenge: 0 };

/** fetch that adds up the Server-Timing of every response (the 402 and the paid retry alike). */
const timedFetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
  const res = await fetch(input, init);
  const header = res.headers.get("Server-Timing") ?? "";
  for (const m of header.matchAll(/(service|facilitator);dur=([\d.]+)/g)) {
    serverTiming[m[1] as "service" | "facilitator"] += Number(m[2]);
    if (m[1] === "service" && res.status === 402) serverTiming.challenge += Number(m[2]);
  }
  return res;
}) as typeof fetch;

/** A paying client that moves to a fresh funded wallet every CALLS_PER_WALLET calls. */
function payingClient(facilitatorUrl: string) {
  let pay: typeof fetch | undefined;
  let used = CALLS_PER_WALLET;
  return async (url: string): Promise<Response> => {
    if (used >= CALLS_PER_WALLET) {
      const account = privateKeyToAccount(generatePrivateKey());
      const res = await fetch(`${facilitatorUrl}/faucet`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ address: account.address, amount: "1000000000" }),
      });
      if (!res.ok) throw new Error(`Cannot fund a bench wallet: faucet answered ${res.status}`);
      const client = new x402Client().register("eip155:8453", new UptoEvmScheme(account)).register("eip155:8453", new ExactEvmScheme(account));
      pay = wrapFetchWithPayment(timedFetch, client);
      used = 0;
    }
    used++;
    return await pay!(url);
  };
}

export async function runPercallCase(options: {
  db: Db;
  databaseUrl: string;
  serverEntry: string;
  apiKey: string;
  wallets: number;
  clients: number;
  seconds: number;
  rounds: number;
  startServer: (name: string, entry: string, env: Record<string, string>) => Promise<ChildServer>;
  log: (line: string) => void;
}): Promise<PercallReport> {
  const facilitator = await startFacilitatorProcess();
  let server: ChildServer | undefined;
  try {
    server = await options.startServer("percall", options.serverEntry, {
      DATABASE_URL: options.databaseUrl,
      WORKER: "0",
      METRICS: "off",
      X402_FACILITATOR_URL: facilitator.url,
      X402_PAY_TO: PAY_TO,
    });
    const target = server;
    options.log(
      `Per call: ${options.clients} clients, ${options.rounds} rounds of a ${options.seconds} s window each way: GET /wallet paid over x402 (upto, ` +
        `through the local facilitator) and the same lookups with an API key, on one server.`,
    );
    const payers = Array.from({ length: options.clients }, () => payingClient(facilitator.url));
    const windows: PercallWindow[] = [];

    const window = async (mode: "paid" | "key"): Promise<PercallWindow> => {
      const latencies: number[] = [];
      let failures = 0;
      let settled = 0;
      const cpu = await startCpuWindow(options.db, target.pid);
      const facilitatorBefore = facilitator.pid ? processCpuMicros(facilitator.pid) : undefined;
      const timingBefore = { ...serverTiming };
      const started = performance.now();
      const stopAt = started + options.seconds * 1000;
      await Promise.all(
        payers.map(async (pay) => {
          while (performance.now() < stopAt) {
            const url = `${target.url}/api/v1/wallet/${randomWallet(options.wallets)}`;
            const t = performance.now();
            const res = mode === "paid" ? await pay(url) : await fetch(url, { headers: { Authorization: `Bearer ${options.apiKey}` } });
            await res.arrayBuffer();
            if (res.status !== 200) failures++;
            else {
              latencies.push(performance.now() - t);
              if (res.headers.has("PAYMENT-RESPONSE")) settled++;
            }
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const figures = await cpu.stop();
      const facilitatorAfter = facilitator.pid ? processCpuMicros(facilitator.pid) : undefined;
      latencies.sort((a, b) => a - b);
      const calls = latencies.length;
      const perCall = (micros: number | null | undefined) => (micros === undefined || micros === null || calls === 0 ? undefined : micros / 1000 / calls);
      return {
        mode,
        calls,
        seconds,
        callsPerSecond: calls / seconds,
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        failures,
        settled,
        serviceMsPerCall: mode === "paid" && calls > 0 ? (serverTiming.service - timingBefore.service) / calls : undefined,
        challengeMsPerCall: mode === "paid" && calls > 0 ? (serverTiming.challenge - timingBefore.challenge) / calls : undefined,
        facilitatorWaitMsPerCall: mode === "paid" && calls > 0 ? (serverTiming.facilitator - timingBefore.facilitator) / calls : undefined,
        serverCpuMsPerCall: perCall(figures.serverMicros),
        facilitatorCpuMsPerCall: perCall(facilitatorBefore !== undefined && facilitatorAfter !== undefined ? facilitatorAfter - facilitatorBefore : undefined),
        postgresCpuMsPerCall: perCall(figures.postgresMicros),
      };
    };

    // a short warm-up each way, then alternating windows so both see the same load
    await window("paid");
    await window("key");
    for (let r = 0; r < options.rounds; r++) {
      for (const mode of r % 2 === 0 ? (["paid", "key"] as const) : (["key", "paid"] as const)) {
        const w = await window(mode);
        windows.push(w);
        options.log(`  round ${r + 1} ${describeWindow(w)}`);
      }
    }
    if (server.failure()) throw new Error(server.failure());
    return { clients: options.clients, windows };
  } finally {
    await server?.stop();
    await facilitator.stop();
  }
}

const ms = (v: number | undefined) => (v === undefined ? "n/a" : `${v.toFixed(2)} ms`);

function describeWindow(w: PercallWindow): string {
  return (
    `${w.mode === "paid" ? "paid per call" : "key-metered  "}: ${w.callsPerSecond.toFixed(1)} calls/s (${w.calls}, ${w.failures} failed), p50 ${w.p50Ms.toFixed(1)} ms, p99 ${w.p99Ms.toFixed(1)} ms; ` +
    `CPU a call: walletid ${ms(w.serverCpuMsPerCall)}, facilitator ${ms(w.facilitatorCpuMsPerCall)}, PostgreSQL ${ms(w.postgresCpuMsPerCall)}` +
    (w.mode === "paid"
      ? `; Server-Timing a call: service ${ms(w.serviceMsPerCall)} (the 402 ${ms(w.challengeMsPerCall)}), facilitator round trips ${ms(w.facilitatorWaitMsPerCall)}; ${w.settled} settled a match, ${w.calls - w.settled} misses settled nothing`
      : "")
  );
}

function mean(values: Array<number | undefined>): number | undefined {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length === 0 ? undefined : known.reduce((a, b) => a + b, 0) / known.length;
}

export function printPercallReport(r: PercallReport, log: (line: string) => void): void {
  const of = (mode: "paid" | "key") => r.windows.filter((w) => w.mode === mode);
  const [paid, key] = [of("paid"), of("key")];
  const rate = (ws: PercallWindow[]) => mean(ws.map((w) => w.callsPerSecond)) ?? 0;
  const serverPaid = mean(paid.map((w) => w.serverCpuMsPerCall));
  const serverKey = mean(key.map((w) => w.serverCpuMsPerCall));
  log(`per call (${r.clients} clients): paid ${rate(paid).toFixed(1)} calls/s against key-metered ${rate(key).toFixed(1)} calls/s (ratio ${(rate(paid) / rate(key)).toFixed(3)})`);
  log(
    `  walletid CPU a call: paid ${ms(serverPaid)} (the 402 and the paid retry, its facilitator requests included), key ${ms(serverKey)}; ` +
      `the paid call's CPU beyond a key's: ${ms(serverPaid !== undefined && serverKey !== undefined ? serverPaid - serverKey : undefined)}`,
  );
  const service = mean(paid.map((w) => w.serviceMsPerCall));
  log(
    `  Server-Timing a paid call (402 + paid retry): the service's own time ${ms(service)} (the 402 ${ms(mean(paid.map((w) => w.challengeMsPerCall)))}), its round trips to the facilitator ${ms(mean(paid.map((w) => w.facilitatorWaitMsPerCall)))}` +
      `${service !== undefined ? (service < 1 ? " (own share under 1 ms: met)" : " (own share 1 ms or more: missed)") : ""}`,
  );
  log(`  facilitator CPU a paid call: ${ms(mean(paid.map((w) => w.facilitatorCpuMsPerCall)))}; PostgreSQL a call: paid ${ms(mean(paid.map((w) => w.postgresCpuMsPerCall)))}, key ${ms(mean(key.map((w) => w.postgresCpuMsPerCall)))}`);
}
