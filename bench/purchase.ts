// The purchase case of `npm run bench`: paid purchases per second through the real server and the
// local facilitator (`scripts/facilitator.ts` in its own process), paid by the official client
// (@x402/fetch over viem local accounts), then 50 concurrent submissions of one signed payment,
// which must grant exactly one pack.
import { spawn } from "node:child_process";
import process from "node:process";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { Db } from "../src/db/types.ts";
import { freePort, ROOT } from "./servers.ts";

const PAY_TO = "0x5e11e5000000000000000000000000000000a402";

export interface PurchaseCaseReport {
  clients: number;
  seconds: number;
  purchases: number;
  purchasesPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  failures: number;
  replay: { submissions: number; newlyGranted: number; replays: number; other: Record<string, number>; grantsWritten: number; ms: number };
}

interface ChildServer {
  url: string;
  failure: () => string | undefined;
  stop: () => Promise<void>;
}

/** `npm run facilitator` as a child process; resolves with its URL from its one line. */
export async function startFacilitatorProcess(): Promise<{ url: string; pid: number | undefined; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/facilitator.ts"], {
    cwd: ROOT,
    env: { ...process.env, FACILITATOR_PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (d) => {
      output += d;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]);
    });
    child.stderr.on("data", (d) => (output += d));
    child.once("exit", (code) => reject(new Error(`Cannot start the facilitator (exit ${code}): ${output.trim()}`)));
  });
  return {
    url,
    pid: child.pid,
    stop: () =>
      new Promise<void>((resolve) => {
        // gone already, by exiting or by a signal (the soak's killAll SIGKILLs it first): its
        // exit event has fired, and waiting for another would never end
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function fundedBuyer(facilitatorUrl: string, dollars: number) {
  const account = privateKeyToAccount(generatePrivateKey());
  const res = await fetch(`${facilitatorUrl}/faucet`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ address: account.address, amount: String(BigInt(dollars) * 1_000_000n) }),
  });
  if (!res.ok) throw new Error(`Cannot fund a bench wallet: faucet answered ${res.status}`);
  const client = new x402Client().register("eip155:8453", new ExactEvmScheme(account)).setSpendControls({ maxAmountPerPayment: "$25" });
  return { account, client, pay: wrapFetchWithPayment(fetch, client) };
}

export async function runPurchaseCase(options: {
  db: Db;
  databaseUrl: string;
  serverEntry: string;
  clients: number;
  seconds: number;
  startServer: (name: string, entry: string, env: Record<string, string>) => Promise<ChildServer>;
  log: (line: string) => void;
}): Promise<PurchaseCaseReport> {
  const facilitator = await startFacilitatorProcess();
  let server: ChildServer | undefined;
  try {
    server = await options.startServer("purchase", options.serverEntry, {
      DATABASE_URL: options.databaseUrl,
      WORKER: "0",
      X402_FACILITATOR_URL: facilitator.url,
      X402_PAY_TO: PAY_TO,
    });
    const buyUrl = `${server.url}/api/x402/buy`;
    const buy = (headers: Record<string, string> = {}) => ({ method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify({ quantity: 1 }) });

    // every client: one wallet, a first keyless purchase for its key, then top-ups of that key
    options.log(`Purchases: ${options.clients} clients paying through the local facilitator for ${options.seconds} s (each purchase: the 402, the signature, verify, claim, settle, grant).`);
    const buyers = await Promise.all(Array.from({ length: options.clients }, () => fundedBuyer(facilitator.url, 100_000)));
    const keys = await Promise.all(
      buyers.map(async (b) => {
        const res = await b.pay(buyUrl, buy());
        const body = (await res.json()) as { api_key?: string };
        if (res.status !== 200 || !body.api_key) throw new Error(`Cannot run the purchase case: a first purchase answered ${res.status} ${JSON.stringify(body)}`);
        return body.api_key;
      }),
    );
    const latencies: number[] = [];
    let failures = 0;
    const started = performance.now();
    const stopAt = started + options.seconds * 1000;
    await Promise.all(
      buyers.map(async (b, i) => {
        while (performance.now() < stopAt) {
          const t = performance.now();
          const res = await b.pay(buyUrl, buy({ Authorization: `Bearer ${keys[i]}` }));
          const body = (await res.json()) as { newly_granted?: boolean };
          if (res.status === 200 && body.newly_granted) latencies.push(performance.now() - t);
          else failures++;
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);

    // 50 concurrent submissions of one payment signed by the official client
    const racer = await fundedBuyer(facilitator.url, 10);
    const challenge = await fetch(buyUrl, buy());
    const required = decodePaymentRequiredHeader(challenge.headers.get("PAYMENT-REQUIRED")!);
    const header = encodePaymentSignatureHeader(await racer.client.createPaymentPayload(required));
    const t0 = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const res = await fetch(buyUrl, buy({ "PAYMENT-SIGNATURE": header }));
        return { status: res.status, body: (await res.json()) as { newly_granted?: boolean } };
      }),
    );
    const replayMs = performance.now() - t0;
    const other: Record<string, number> = {};
    for (const a of answers) if (a.status !== 200) other[a.status] = (other[a.status] ?? 0) + 1;
    const [{ grants }] = await options.db.query<{ grants: number }>(
      "SELECT count(*)::integer AS grants FROM credit_grants g JOIN x402_wallets w ON w.account_id = g.account_id WHERE w.wallet = $1",
      [racer.account.address.toLowerCase()],
    );
    if (server.failure()) throw new Error(server.failure());
    return {
      clients: options.clients,
      seconds: elapsed,
      purchases: latencies.length,
      purchasesPerSecond: latencies.length / elapsed,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      failures,
      replay: {
        submissions: answers.length,
        newlyGranted: answers.filter((a) => a.status === 200 && a.body.newly_granted === true).length,
        replays: answers.filter((a) => a.status === 200 && a.body.newly_granted === false).length,
        other,
        grantsWritten: grants,
        ms: replayMs,
      },
    };
  } finally {
    await server?.stop();
    await facilitator.stop();
  }
}

export function printPurchaseReport(r: PurchaseCaseReport, log: (line: string) => void): void {
  log(
    `paid purchases: ${r.purchasesPerSecond.toFixed(1)} purchases/s (${r.purchases} in ${r.seconds.toFixed(1)} s, ${r.clients} clients), ` +
      `p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms per purchase (402 + paid retry), ${r.failures} failures`,
  );
  const x = r.replay;
  log(
    `50 concurrent submissions of one payment: ${x.newlyGranted} newly granted, ${x.replays} answered as replays` +
      `${Object.keys(x.other).length ? `, other ${JSON.stringify(x.other)}` : ""}; grants written: ${x.grantsWritten} (in ${x.ms.toFixed(0)} ms)` +
      `${x.newlyGranted === 1 && x.grantsWritten === 1 ? "" : "  WRONG: exactly one pack must be granted"}`,
  );
}
