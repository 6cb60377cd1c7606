// The delivery loop: claims due deliveries with leases (webhook_deliveries_claim), sends each
// through the Outbound module with its Standard Webhooks signature, and records the outcome.
// Runs in the server and in `npm run worker`, as many processes as there are; a notification at
// the cause's commit wakes it, and it polls all the same. Attempts run beside each other, at most
// `concurrency` at once and `perEndpoint` of one endpoint, so a slow or dead receiver holds a few
// slots for at most WEBHOOK_TIMEOUT_MS and never the others, the requests or the jobs.
import type { Config } from "../config.ts";
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { WEBHOOKS_CHANNEL } from "../index/changes.ts";
import { OutboundError, type Outbound } from "../http/outbound.ts";
import type { Log } from "../observe/log.ts";
import { metrics } from "../observe/metrics.ts";
import { secretBox, type SecretBox } from "./secrets.ts";
import { signature } from "./sign.ts";

/** A receiver's answer is read up to this many bytes; a longer one still counts by its status. */
const MAX_ANSWER_BYTES = 64 * 1024;

export interface Deliverer {
  readonly owner: string;
  /** Claims what is due and waits for those attempts; the number claimed. */
  runOnce(): Promise<number>;
  /** Delivers until stop(); resolves once listening, before the first claim. */
  start(): Promise<void>;
  /** Stops claiming and waits for the attempts in flight. */
  stop(): Promise<void>;
}

export interface DelivererParams {
  db: Db;
  config: Config;
  outbound: Outbound;
  now: () => Date;
  log: Log;
  owner?: string;
  /** Attempts in flight at once in this process (default 64). */
  concurrency?: number;
  /** Requests at one endpoint at once (default 16: a slow receiver holds at most a quarter of the slots). */
  perEndpoint?: number;
  /** Poll interval while nothing is due (default 1000 ms). */
  idleMs?: number;
  secrets?: SecretBox;
}

type Claimed = {
  id: string;
  event_id: string;
  endpoint_id: string;
  attempts: number;
  body: string;
  url: string;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_until: Date | null;
};

export function createDeliverer(params: DelivererParams): Deliverer {
  const { db, outbound, log } = params;
  const owner = params.owner ?? `webhooks:${crypto.randomUUID()}`;
  const concurrency = params.concurrency ?? 64;
  const perEndpoint = params.perEndpoint ?? 16;
  const idleMs = params.idleMs ?? 1000;
  const box = params.secrets ?? secretBox(db, params.config.webhooks.secretKey);
  const { retryScheduleMs: schedule, timeoutMs } = params.config.webhooks;
  // a claim outlives the longest attempt: the send's own timeout, then writing its outcome
  const leaseSeconds = Math.ceil((2 * timeoutMs) / 1000) + 5;

  const inFlight = new Map<string, number>();
  const running = new Set<Promise<void>>();
  let stopping = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let notified = false;

  // Outcomes are written in groups: the first at once, those that finish while it is written
  // together after it, so that a busy loop writes one statement for many attempts.
  type Outcome = { id: string; at: Date; status: "delivered" | "pending" | "failed"; code: number | null; next: Date | null };
  const outcomes: Array<Outcome & { settle: (err?: Error) => void }> = [];
  let writing = false;

  async function writeOutcomes() {
    writing = true;
    try {
      while (outcomes.length > 0) {
        const group = outcomes.splice(0, 1000);
        const failure = await db
          .query(sql("webhook_deliveries_finish"), [group.map((o) => o.id), owner, group.map((o) => o.at), group.map((o) => o.status), group.map((o) => o.code), group.map((o) => o.next)])
          .then(() => undefined, (err: Error) => err);
        for (const o of group) o.settle(failure);
      }
    } finally {
      writing = false;
    }
  }

  function finish(row: Claimed, status: Outcome["status"], code: number | null, next: Date | null): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      outcomes.push({ id: row.id, at: params.now(), status, code, next, settle: (err) => (err ? reject(err) : resolve()) });
      if (!writing) void writeOutcomes();
    });
  }

  /** Sends one delivery and writes its outcome; `sent` is called once the receiver has answered or failed (not after a 410). */
  async function attempt(row: Claimed, sent: () => void): Promise<void> {
    const now = params.now();
    let code: number | null = null;
    let reason: string;
    try {
      const secrets = [await box.open(row.secret_enc)];
      if (row.previous_secret_enc && row.previous_until && new Date(row.previous_until) > now) secrets.push(await box.open(row.previous_secret_enc));
      // the attempt's own time: receivers check it against their clock
      const timestamp = Math.floor(Date.now() / 1000);
      const answer = await outbound.send({
        url: row.url,
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "walletid-webhooks/1",
          "webhook-id": row.event_id,
          "webhook-timestamp": String(timestamp),
          "webhook-signature": await signature(secrets, row.event_id, timestamp, row.body),
        },
        body: row.body,
        timeoutMs,
        maxBytes: MAX_ANSWER_BYTES,
      });
      code = answer.status;
      reason = `answered ${answer.status}`;
    } catch (err) {
      reason = err instanceof OutboundError ? `not sent: ${err.reason}` : "not sent: the secret could not be read";
      if (!(err instanceof OutboundError)) log(`webhook endpoint ${row.endpoint_id}: ${(err as Error).message}`, "error");
    }
    // the receiver is done with this attempt: its slot is free while the outcome is written (but
    // for a 410, whose slot stays taken until the endpoint is disabled, so nothing more is claimed for it)
    if (code !== 410) sent();

    if (code !== null && code >= 200 && code < 300) {
      metrics.webhookAttempts.inc({ outcome: "delivered" });
      metrics.webhookDeliveries.inc({ outcome: "delivered" });
      await finish(row, "delivered", code, null);
      return;
    }
    if (code === 410) {
      metrics.webhookAttempts.inc({ outcome: "gone" });
      metrics.webhookDeliveries.inc({ outcome: "failed" });
      log(`webhook endpoint ${row.endpoint_id}: delivery ${row.id} attempt ${row.attempts} answered 410 Gone; the endpoint is disabled`, "warn");
      await finish(row, "failed", code, null);
      await db.query(sql("webhook_endpoints_disable"), [row.endpoint_id, "answered 410 Gone", row.id]);
      return;
    }
    metrics.webhookAttempts.inc({ outcome: "failed" });
    const delay = schedule[row.attempts];
    if (delay === undefined) {
      metrics.webhookDeliveries.inc({ outcome: "failed" });
      log(`webhook endpoint ${row.endpoint_id}: delivery ${row.id} attempt ${row.attempts} failed (${reason}); no retries left`, "warn");
      await finish(row, "failed", code, null);
    } else {
      const next = new Date(now.getTime() + delay);
      log(`webhook endpoint ${row.endpoint_id}: delivery ${row.id} attempt ${row.attempts} failed (${reason}); next attempt at ${next.toISOString()}`, "warn");
      await finish(row, "pending", code, next);
    }
  }

  function track(row: Claimed) {
    // `inFlight` counts requests at each endpoint (a receiver's slots), `running` every attempt
    // until its outcome is written
    inFlight.set(row.endpoint_id, (inFlight.get(row.endpoint_id) ?? 0) + 1);
    let sent = false;
    const release = () => {
      if (sent) return;
      sent = true;
      const left = inFlight.get(row.endpoint_id)! - 1;
      if (left === 0) inFlight.delete(row.endpoint_id);
      else inFlight.set(row.endpoint_id, left);
      wake?.();
    };
    const done: Promise<void> = attempt(row, release)
      .catch((err: Error) => {
        // the outcome could not be written: the claim's lease runs out and the delivery is sent again
        log(`webhook endpoint ${row.endpoint_id}: delivery ${row.id}: ${err.message}; it is retried when its lease ends`, "error");
      })
      .finally(() => {
        release();
        running.delete(done);
        wake?.();
      });
    running.add(done);
    return done;
  }

  async function claim(): Promise<Promise<void>[]> {
    const free = concurrency - running.size;
    if (free <= 0) return [];
    const busy = [...inFlight].filter(([, n]) => n >= perEndpoint).map(([id]) => id);
    const rows = await db.query<Claimed>(sql("webhook_deliveries_claim"), [owner, params.now(), leaseSeconds, free, perEndpoint, busy]);
    return rows.map(track);
  }

  async function listen() {
    try {
      return await db.listen?.(WEBHOOKS_CHANNEL, () => {
        notified = true;
        wake?.();
      });
    } catch (err) {
      log(`webhook delivery: cannot listen for new events (${(err as Error).message}); polling every ${idleMs} ms`, "warn");
      return undefined;
    }
  }

  async function run(unlisten: (() => Promise<void>) | undefined) {
    while (!stopping) {
      notified = false;
      let claimed = 0;
      try {
        claimed = (await claim()).length;
      } catch (err) {
        log(`webhook delivery: cannot claim deliveries (${(err as Error).message}); trying again`, "warn");
      }
      if ((claimed === 0 || running.size >= concurrency) && !stopping && !notified) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, idleMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    }
    await Promise.all(running);
    await unlisten?.().catch(() => {});
  }

  return {
    owner,
    async runOnce() {
      const started = await claim();
      await Promise.all(started);
      return started.length;
    },
    async start() {
      if (loop) return;
      const listening = listen();
      loop = listening.then(run);
      await listening;
    },
    async stop() {
      stopping = true;
      wake?.();
      await loop;
    },
  };
}

/**
 * The delivery loop of an entry point (the server, `npm run worker`), started; none, with a log
 * line saying why, when the runtime has no Outbound module to send with.
 */
export async function startDelivery(params: Omit<DelivererParams, "outbound"> & { outbound: Outbound | undefined }): Promise<Deliverer | undefined> {
  if (!params.outbound) {
    params.log("Webhook delivery is off: this runtime has no outbound module for user-given URLs", "warn");
    return undefined;
  }
  const deliverer = createDeliverer({ ...params, outbound: params.outbound });
  await deliverer.start();
  return deliverer;
}
