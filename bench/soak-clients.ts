// The soak's clients (bench/soak.ts): callers that behave as real ones against several API servers
// taken in turn (as behind a load balancer), and the tallies the end-of-run checks compare with the
// ledger. An unanswered call (a killed server, a reset connection) is sent again: a keyed batch
// or a signed payment with the same Idempotency-Key or signature until answered; a call without
// a key as a new call, its first attempt noted as possibly billed.
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { x402Client } from "@x402/fetch";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

export interface Tally {
  /** Answers received (any status), and attempts that got none. */
  answered: number;
  unanswered: number;
  /** Answers by status class, for the summary. */
  statuses: Record<string, number>;
  /** 5xx answers other than 503 with Retry-After: each is a violation. */
  bad5xx: string[];
  /** Each answer's start and end (ms since the run began), to find the longest outside the fault windows. */
  timings: Array<[start: number, end: number]>;
  /** Matches the answers of the free account's calls say they billed, and the most its unanswered attempts could have. */
  freeBilled: number;
  freeUnansweredMax: number;
  /** Idempotency-Key -> the matches its answer says were billed. */
  keyed: Map<string, number>;
  /** Jobs the clients saw accepted (ids), and how many submissions went unanswered. */
  jobsAccepted: Set<string>;
  /** Signed payments answered 200, and the keys they were made under. */
  purchases: number;
  /** Signed payments given up after 90 s without a 200. */
  purchasesAbandoned: number;
  purchaseFailures: string[];
  /** The buyer's wallet and what the faucet gave it, to read what the facilitator settled. */
  buyer?: { address: string; funded: bigint };
}

export function newTally(): Tally {
  return {
    answered: 0,
    unanswered: 0,
    statuses: {},
    bad5xx: [],
    timings: [],
    freeBilled: 0,
    freeUnansweredMax: 0,
    keyed: new Map(),
    jobsAccepted: new Set(),
    purchases: 0,
    purchasesAbandoned: 0,
    purchaseFailures: [],
  };
}

export interface Target {
  /** The API servers' base URLs, taken in turn. */
  urls: string[];
  tally: Tally;
  /** ms since the run began */
  clock: () => number;
  /** true once the load should stop starting new calls */
  stopping: () => boolean;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

let turn = 0;
function nextUrl(target: Target): string {
  turn = (turn + 1) % target.urls.length;
  return target.urls[turn];
}

/** One HTTP attempt on the next server: the answer, or null when none came (reset, refused, 30 s). */
async function attempt(target: Target, path: string, init: RequestInit): Promise<{ status: number; headers: Headers; body: any } | null> {
  const started = target.clock();
  try {
    const res = await fetch(`${nextUrl(target)}${path}`, { ...init, signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    const ended = target.clock();
    const t = target.tally;
    t.answered++;
    t.timings.push([started, ended]);
    const klass = `${Math.floor(res.status / 100)}xx`;
    t.statuses[klass] = (t.statuses[klass] ?? 0) + 1;
    if (res.status >= 500 && !(res.status === 503 && res.headers.get("Retry-After"))) {
      t.bad5xx.push(`${init.method ?? "GET"} ${path.slice(0, 60)} -> ${res.status} ${text.slice(0, 120)}`);
    }
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return { status: res.status, headers: res.headers, body };
  } catch {
    target.tally.unanswered++;
    return null;
  }
}

/** Waits what a 503 or 409 asks (Retry-After seconds, at most 2), or a moment after no answer. */
async function backoff(answer: { headers: Headers } | null): Promise<void> {
  const after = Number(answer?.headers.get("Retry-After") ?? 0);
  await sleep(answer ? Math.min(2000, Math.max(100, after * 1000)) : 100 + Math.random() * 200);
}

const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
const json = (key: string, extra: Record<string, string> = {}) => ({ ...bearer(key), "Content-Type": "application/json", ...extra });

/** The free account's mixed calls: single lookups, unkeyed batches, reverse pages, estimates, MCP tool calls. */
export async function freeCaller(target: Target, key: string, wallet: () => string, crowdHandle: string): Promise<void> {
  const t = target.tally;
  let cursor: string | null = null;
  // no answer, or a 5xx: the call may have been billed before it failed (a refusal never is)
  const unbilled = async (answer: { status: number; headers: Headers } | null, most: number) => {
    if (!answer || answer.status >= 500) t.freeUnansweredMax += most;
    if (answer) await backoff(answer);
  };
  while (!target.stopping()) {
    const roll = Math.random();
    if (roll < 0.35) {
      const answer = await attempt(target, `/api/v1/wallet/${wallet()}`, { headers: bearer(key) });
      if (answer?.status === 200) t.freeBilled += answer.body?.data?.twitter || answer.body?.data?.farcaster ? 1 : 0;
      else await unbilled(answer, 1);
    } else if (roll < 0.55) {
      const wallets = Array.from({ length: 10 }, wallet);
      const answer = await attempt(target, "/api/v1/batch", { method: "POST", headers: json(key), body: JSON.stringify({ wallets }) });
      if (answer?.status === 200) t.freeBilled += answer.body.meta.matched;
      else await unbilled(answer, wallets.length);
    } else if (roll < 0.7) {
      const query = cursor ? `?cursor=${encodeURIComponent(cursor)}` : "";
      const answer = await attempt(target, `/api/v1/reverse/twitter/${crowdHandle}${query}`, { headers: bearer(key) });
      if (answer?.status === 200) {
        // a reverse page bills one credit per wallet it returns (its meta has no `matched`)
        t.freeBilled += answer.body.meta.returned_count;
        cursor = answer.body.meta.next_cursor ?? null;
      } else await unbilled(answer, 100);
    } else if (roll < 0.85) {
      const wallets = Array.from({ length: 50 }, wallet);
      const answer = await attempt(target, "/api/v1/estimate", { method: "POST", headers: json(key), body: JSON.stringify({ wallets }) });
      if (answer && answer.status !== 200) await backoff(answer);
    } else {
      const answer = await attempt(target, "/mcp", {
        method: "POST",
        headers: json(key, { Accept: "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25" }),
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "walletid_resolve_wallets", arguments: { wallets: [wallet(), wallet()] } } }),
      });
      const billed = answer?.body?.result?.structuredContent?.billed_matches;
      if (answer?.status === 200 && typeof billed === "number") t.freeBilled += billed;
      // a tool error (isError) is the MCP face's refusal or 503: like one, it may follow a debit
      else if (answer?.status === 200 && answer.body?.result?.isError) await unbilled({ status: 503, headers: answer.headers }, 2);
      else if (answer?.status === 200) t.bad5xx.push(`MCP tools/call answered 200 without a result: ${JSON.stringify(answer.body).slice(0, 200)}`);
      else await unbilled(answer, 2);
    }
  }
}

/** Batches of 20 under a fresh Idempotency-Key each, sent again with the same key until answered 200. */
export async function keyedCaller(target: Target, key: string, wallet: () => string, name: string): Promise<void> {
  let n = 0;
  while (!target.stopping()) {
    const idempotencyKey = `soak-${name}-${++n}`;
    const body = JSON.stringify({ wallets: Array.from({ length: 20 }, wallet) });
    // once started, a keyed call is driven to its answer even after the load stops
    for (;;) {
      const answer = await attempt(target, "/api/v1/batch", { method: "POST", headers: json(key, { "Idempotency-Key": idempotencyKey }), body });
      if (answer?.status === 200) {
        const seen = target.tally.keyed.get(idempotencyKey);
        if (seen !== undefined && seen !== answer.body.meta.matched) {
          target.tally.bad5xx.push(`key ${idempotencyKey} answered ${seen} then ${answer.body.meta.matched} matches`);
        }
        target.tally.keyed.set(idempotencyKey, answer.body.meta.matched);
        break;
      }
      await backoff(answer);
    }
  }
}

/** One job at a time for its account: 100 to 20,000 addresses, polled until completed. */
export async function jobCaller(target: Target, key: string, wallet: () => string): Promise<void> {
  while (!target.stopping()) {
    const size = 100 + Math.floor(Math.random() ** 2 * 19_900);
    const body = JSON.stringify({ wallets: Array.from({ length: size }, wallet) });
    let jobId: string | undefined;
    while (!jobId) {
      const answer = await attempt(target, "/api/v1/jobs", { method: "POST", headers: json(key), body });
      if (answer?.status === 202) jobId = answer.body.data.job_id;
      // an unanswered submission that was accepted after all: poll that one
      else if (answer?.status === 409 && answer.body?.code === "JOB_ALREADY_ACTIVE") jobId = /([0-9a-f-]{36})/.exec(answer.body.error)?.[1];
      else await backoff(answer);
    }
    target.tally.jobsAccepted.add(jobId);
    for (;;) {
      const answer = await attempt(target, `/api/v1/jobs/${jobId}`, { headers: bearer(key) });
      const status = answer?.status === 200 ? answer.body.data.status : undefined;
      if (status === "completed" || status === "failed") break;
      await sleep(250);
    }
  }
}

/**
 * Purchases of one Agent pack each through the local facilitator: the wallet's first one without
 * a key (it answers with the key), later ones topping that key up. Each signed payment is sent
 * again, unchanged, until answered 200.
 */
export async function buyerCaller(target: Target, facilitatorUrl: string): Promise<void> {
  const account = privateKeyToAccount(generatePrivateKey());
  const funded = await fetch(`${facilitatorUrl}/faucet`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ address: account.address, amount: String(1_000_000n * 1_000_000n) }),
  });
  if (!funded.ok) throw new Error(`Cannot fund the soak's buyer: the faucet answered ${funded.status}`);
  target.tally.buyer = { address: account.address, funded: 1_000_000n * 1_000_000n };
  const client = new x402Client().register("eip155:8453", new ExactEvmScheme(account));
  let apiKey: string | undefined;
  while (!target.stopping()) {
    const headers: Record<string, string> = { "Content-Type": "application/json", ...(apiKey ? bearer(apiKey) : {}) };
    const body = JSON.stringify({ quantity: 1 });
    const challenge = await attempt(target, "/api/x402/buy", { method: "POST", headers, body });
    if (challenge?.status !== 402 || !challenge.headers.get("PAYMENT-REQUIRED")) {
      await backoff(challenge);
      continue;
    }
    const required = decodePaymentRequiredHeader(challenge.headers.get("PAYMENT-REQUIRED")!);
    const signature = encodePaymentSignatureHeader(await client.createPaymentPayload(required));
    // a claim whose server was killed is taken over by a replay once it is older than twice
    // UPSTREAM_TIMEOUT_MS plus 30 s (50 s by default): a buyer resends the same payment for 90 s
    const giveUpAt = target.clock() + 90_000;
    for (;;) {
      if (target.clock() > giveUpAt) {
        target.tally.purchasesAbandoned++;
        break;
      }
      const answer = await attempt(target, "/api/x402/buy", { method: "POST", headers: { ...headers, "PAYMENT-SIGNATURE": signature }, body });
      if (answer?.status === 200) {
        target.tally.purchases++;
        apiKey ??= answer.body.api_key ?? undefined;
        break;
      }
      if (answer && answer.status < 500 && answer.status !== 409 && answer.status !== 429) {
        target.tally.purchaseFailures.push(`${answer.status} ${JSON.stringify(answer.body).slice(0, 160)}`);
        break;
      }
      await backoff(answer);
    }
  }
}

/** Where the soak's purchases pay to (X402_PAY_TO of its servers). */
export const SOAK_PAY_TO = "0x50a4000000000000000000000000000000000402";
