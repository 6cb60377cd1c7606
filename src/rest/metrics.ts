// GET {site_url}/metrics: the Prometheus exposition. Never metered. With METRICS_TOKEN set it needs
// `Authorization: Bearer <token>` (compared in constant time); without, only loopback callers
// (the address TRUST_PROXY resolves) are answered.
import { Hono, type Context } from "hono";
import { sql } from "../db/queries.ts";
import { ApiError } from "../http/errors.ts";
import { metrics, type Gauge } from "../observe/metrics.ts";
import type { Operation } from "../openapi/operation.ts";
import { clientAddress } from "../http/client-address.ts";
import type { OperationDeps } from "../operations/deps.ts";

/** How long a scrape waits for the database's gauges before leaving them out. */
const GAUGE_TIMEOUT_MS = 2000;

export const metricsOpenapi: Operation[] = [
  {
    method: "get",
    path: "/metrics",
    site: true,
    operationId: "metrics",
    tag: "Service",
    summary: "Prometheus metrics",
    description:
      "The Prometheus text exposition (format 0.0.4): requests and latency by route template and status, metering outcomes, matches billed, jobs by status with the queue depth and the oldest pending job's age, worker wallets by stage, webhook deliveries by status and attempts by outcome with the queue depth and the oldest due delivery's age, upstream calls by source and outcome, database statements in flight, the last maintenance run per task, and the Farcaster hub sync (last event applied, newest seen, events behind, backfill progress). Never metered. With `METRICS_TOKEN` set it needs `Authorization: Bearer <METRICS_TOKEN>`; without it, only loopback callers are answered.",
    auth: false,
    success: { status: 200, description: "The exposition, `text/plain; version=0.0.4`", text: true },
    errors: [
      { status: 401, codes: ["UNAUTHORIZED (METRICS_TOKEN set, wrong or missing bearer token)"] },
      { status: 403, codes: ["FORBIDDEN (no METRICS_TOKEN and the caller is not on loopback)"] },
    ],
  },
];

function isLoopback(address: string): boolean {
  return address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.");
}

/** Constant-time comparison of two strings of any length (their SHA-256 digests are compared). */
async function sameSecret(given: string, expected: string): Promise<boolean> {
  const digest = async (s: string) => new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)));
  const [a, b] = await Promise.all([digest(given), digest(expected)]);
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

function withTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("metrics gauge timed out")), GAUGE_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}

interface HubRow {
  fids_done: number;
  shards_done: number;
  shards: number;
  last_event_id: number | null;
  head_event_id: number | null;
  backfill_done: boolean;
  [column: string]: unknown;
}

/** The gauges of one scrape, read from the app's database (each query once, with a timeout). */
function scrapeGauges(deps: OperationDeps): Gauge[] {
  const { db } = deps;
  let jobsRead: Promise<Array<{ status: string; jobs: number; oldest_age_seconds: number | null }>> | undefined;
  const jobs = () => (jobsRead ??= withTimeout(db.query(sql("jobs_select_metrics"), [deps.now()])));
  let maintenanceRead: Promise<Array<{ task: string; last_success_seconds: number | null; last_status: string | null }>> | undefined;
  const maintenance = () => (maintenanceRead ??= withTimeout(db.query(sql("maintenance_runs_select_metrics"), [])));
  let webhooksRead: Promise<Array<{ status: string; deliveries: number; oldest_age_seconds: number | null }>> | undefined;
  const webhooks = () => (webhooksRead ??= withTimeout(db.query(sql("webhook_deliveries_select_metrics"), [deps.now()])));
  let hubRead: Promise<HubRow | undefined> | undefined;
  const hub = () => (hubRead ??= withTimeout(db.query<HubRow>(sql("hub_shards_select_metrics"), [])).then((rows) => rows[0]));
  // the hub's families only once a backfill has started (FARCASTER_HUB_URL or admin ingest farcaster)
  const hubGauge = (name: string, help: string, value: (r: HubRow) => number): Gauge => ({
    name,
    help,
    read: async () => {
      const r = await hub();
      return r && (r.shards > 0 || r.last_event_id !== null) ? [{ value: value(r) }] : [];
    },
  });
  return [
    {
      name: "walletid_webhook_deliveries",
      help: "Webhook deliveries by status (pending, delivered, failed)",
      read: async () => (await webhooks()).map((r) => ({ labels: { status: r.status }, value: Number(r.deliveries) })),
    },
    {
      name: "walletid_webhook_queue_depth",
      help: "Webhook deliveries pending (due or waiting for a retry)",
      read: async () => [{ value: Number((await webhooks()).find((r) => r.status === "pending")?.deliveries ?? 0) }],
    },
    {
      name: "walletid_webhook_oldest_pending_age_seconds",
      help: "How long the oldest due webhook delivery has waited (0 when none)",
      read: async () => [{ value: Math.max(0, Number((await webhooks()).find((r) => r.status === "pending")?.oldest_age_seconds ?? 0)) }],
    },
    { name: "walletid_jobs", help: "Jobs by status", read: async () => (await jobs()).map((r) => ({ labels: { status: r.status }, value: Number(r.jobs) })) },
    {
      name: "walletid_job_queue_depth",
      help: "Jobs waiting for a worker",
      read: async () => [{ value: Number((await jobs()).find((r) => r.status === "pending")?.jobs ?? 0) }],
    },
    {
      name: "walletid_job_oldest_pending_age_seconds",
      help: "Age of the oldest pending job (0 when none)",
      read: async () => [{ value: Math.max(0, Number((await jobs()).find((r) => r.status === "pending")?.oldest_age_seconds ?? 0)) }],
    },
    {
      name: "walletid_db_statements_in_flight",
      help: "Database statements this process is waiting on (the pool in use)",
      read: () => [{ value: metrics.dbInFlight.value }],
    },
    {
      name: "walletid_maintenance_last_success_timestamp_seconds",
      help: "Start of the newest finished run per maintenance task (0: never)",
      read: async () => (await maintenance()).map((r) => ({ labels: { task: r.task }, value: Number(r.last_success_seconds ?? 0) })),
    },
    hubGauge("walletid_hub_last_event_id", "The last Farcaster hub event applied to the index", (r) => r.last_event_id ?? 0),
    hubGauge("walletid_hub_head_event_id", "The newest Farcaster hub event id the sync has seen", (r) => r.head_event_id ?? 0),
    hubGauge(
      "walletid_hub_events_behind",
      "Event ids between the last event applied and the newest seen on the hub (0: caught up)",
      (r) => Math.max(0, (r.head_event_id ?? 0) - (r.last_event_id ?? r.head_event_id ?? 0)),
    ),
    hubGauge("walletid_hub_backfill_fids", "fids the hub backfill has written", (r) => r.fids_done),
    hubGauge("walletid_hub_backfill_shards_done", "Hub shards the backfill has finished", (r) => r.shards_done),
    hubGauge("walletid_hub_backfill_shards", "Hub shards the backfill reads", (r) => r.shards),
    hubGauge("walletid_hub_backfill_done", "1 once a hub backfill has finished", (r) => (r.backfill_done ? 1 : 0)),
    {
      name: "walletid_maintenance_last_result",
      help: "1 for how the last run of each maintenance task ended (done, partial, failed, off, ...)",
      read: async () => (await maintenance()).filter((r) => r.last_status).map((r) => ({ labels: { task: r.task, result: r.last_status! }, value: 1 })),
    },
  ];
}

export function metricsRoutes(deps: OperationDeps, peerAddress?: (req: Request, env: unknown) => string | undefined) {
  const app = new Hono();
  app.get("/metrics", async (c: Context) => {
    const token = deps.config.metricsToken;
    if (token) {
      const given = /^Bearer\s+(\S+)$/i.exec(c.req.header("Authorization") ?? "")?.[1] ?? "";
      if (!(await sameSecret(given, token))) {
        throw new ApiError(401, "UNAUTHORIZED", "Send Authorization: Bearer <METRICS_TOKEN>", { "WWW-Authenticate": 'Bearer realm="walletid-metrics"' });
      }
    } else if (!isLoopback(clientAddress(c.req.raw, peerAddress?.(c.req.raw, c.env), deps.config.trustProxy))) {
      throw new ApiError(403, "FORBIDDEN", "Metrics answer loopback callers only: set METRICS_TOKEN to scrape from elsewhere");
    }
    return c.body(await metrics.registry.expose(scrapeGauges(deps)), 200, { "Content-Type": "text/plain; version=0.0.4; charset=utf-8", "Cache-Control": "no-store" });
  });
  return app;
}
