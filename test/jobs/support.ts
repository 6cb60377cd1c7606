// A job test bench: fixture index, fake live upstreams, a listening server wired to them, and an
// in-process worker the test drives one job at a time.
import type { Db } from "../../src/db/types.ts";
import { jobRunDeps } from "../../src/jobs/deps.ts";
import type { JobRunDeps } from "../../src/jobs/run.ts";
import { createWorker, type Worker } from "../../src/jobs/worker.ts";
import type { RetryOptions } from "../../src/sources/types.ts";
import { address } from "../support/http.ts";
import { startServer, type Clock, type TestServer } from "../support/server.ts";
import { startFakeEthRpc, startFakeNeynar, type FakeFarcasterUser, type FakeUpstream } from "../support/upstreams.ts";

/** Farcaster accounts only the live source knows: fid 1000 + i, X account on even i. */
export const liveFarcaster = (i: number) => address(i, "f1");
/** Primary ENS names only the Ethereum RPC knows. */
export const liveEns = (i: number) => address(i, "e9");
/** Nobody knows these. */
export const unknown = (i: number) => address(i, "0c");

export function farcasterUserOf(a: string): FakeFarcasterUser | undefined {
  if (!a.startsWith("0xf1")) return undefined;
  const i = parseInt(a.slice(4), 16);
  return { fid: 1000 + i, username: `live${i}`, followers: i, ...(i % 2 === 0 ? { x: `LiveX${i}` } : {}) };
}

export function ensNameOf(a: string): string | undefined {
  return a.startsWith("0xe9") ? `live${parseInt(a.slice(4), 16)}.eth` : undefined;
}

export const FAST_RETRY: RetryOptions = { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 };

export interface JobBench {
  server: TestServer;
  neynar: FakeUpstream;
  rpc: FakeUpstream;
  runDeps: JobRunDeps;
  worker: Worker;
  logs: string[];
  close(): Promise<void>;
}

export async function startJobBench(db: Db, clock: Clock, env: Record<string, string> = {}): Promise<JobBench> {
  const neynar = await startFakeNeynar(farcasterUserOf, { apiKey: "neynar-test-key" });
  const rpc = await startFakeEthRpc(ensNameOf);
  const fullEnv = {
    NEYNAR_API_URL: neynar.url,
    NEYNAR_API_KEY: "neynar-test-key",
    ETH_RPC_URL: rpc.url,
    UPSTREAM_TIMEOUT_MS: "2000",
    ...env,
  };
  const server = await startServer(db, { clock, env: fullEnv, app: { retry: FAST_RETRY } });
  const logs: string[] = [];
  const runDeps = jobRunDeps(server.config, { db, now: clock.now, log: (line) => logs.push(line), retry: FAST_RETRY });
  const worker = createWorker(runDeps);
  return {
    server,
    neynar,
    rpc,
    runDeps,
    worker,
    logs,
    async close() {
      await worker.stop();
      await server.close();
      await neynar.close();
      await rpc.close();
    },
  };
}

export function submit(server: TestServer, key: string, wallets: unknown[]) {
  return server.request("/api/v1/jobs", {
    method: "POST",
    key,
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ wallets }),
  });
}

export function poll(server: TestServer, key: string, id: string, query = "") {
  return server.request(`/api/v1/jobs/${id}${query}`, { key });
}
