// Webhook endpoints of the caller's account: register, list, delete, rotate the secret, the
// delivery log and a redelivery. API key only, free on both meters. Face: REST /webhooks.
import { sql } from "../db/queries.ts";
import { ApiError } from "../http/errors.ts";
import type { Metered, Meterer } from "../http/meter.ts";
import { OutboundError } from "../http/outbound.ts";
import { newEndpointSecret } from "../webhooks/secrets.ts";
import { WEBHOOKS_CHANNEL } from "../index/changes.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

export const WEBHOOKS_ROUTE = "/v1/webhooks";
export const WEBHOOK_ROUTE = "/v1/webhooks/{id}";
export const WEBHOOK_ROTATE_ROUTE = "/v1/webhooks/{id}/rotate";
export const WEBHOOK_DELIVERIES_ROUTE = "/v1/webhooks/{id}/deliveries";
export const WEBHOOK_REDELIVER_ROUTE = "/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver";

export const EVENT_TYPES = ["job.completed", "job.failed", "wallet.changed"] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Endpoints an account may have at most. */
export const ENDPOINTS_MAX = 5;
/** How long the secret a rotation replaces keeps signing beside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;
/** Delivery log rows a page. */
export const DELIVERIES_PAGE = 50;
const URL_MAX = 2048;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type EndpointRow = { id: string; url: string; events: string[]; enabled: boolean; disabled_reason?: string | null; created_at: Date };

export interface Endpoint {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  created_at: string;
}

function endpointJson(row: EndpointRow): Endpoint {
  return { id: row.id, url: row.url, events: row.events, enabled: row.enabled, created_at: new Date(row.created_at).toISOString() };
}

function notFound(id: string): ApiError {
  return new ApiError(404, "WEBHOOK_NOT_FOUND", `Webhook endpoint not found: ${id.slice(0, 60)} is not an endpoint of this account`);
}

function unavailable(): ApiError {
  return new ApiError(503, "SERVICE_UNAVAILABLE", "Webhook delivery is not available on this server right now; try again later", { "Retry-After": "60" });
}

function invalidUrl(why: string): ApiError {
  return new ApiError(400, "INVALID_WEBHOOK_URL", `Invalid webhook url: ${why}`);
}

/** The event types asked for: all three when absent; an unknown or empty list is refused. */
function eventsOf(events: unknown): EventType[] {
  if (events === undefined) return [...EVENT_TYPES];
  if (!Array.isArray(events) || events.length === 0 || events.some((e) => typeof e !== "string" || !(EVENT_TYPES as readonly string[]).includes(e))) {
    throw new ApiError(400, "INVALID_PARAMETER", `Invalid events: a non-empty list of ${EVENT_TYPES.join(", ")}`);
  }
  return [...new Set(events as EventType[])];
}

/** Checks the URL's form here and, through the Outbound module, where it resolves now. */
async function checkUrl(deps: OperationDeps, url: unknown): Promise<string> {
  if (typeof url !== "string" || url.length === 0) throw invalidUrl("send `url`, an https URL");
  if (url.length > URL_MAX) throw invalidUrl(`at most ${URL_MAX} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidUrl("it is not a URL");
  }
  if (parsed.username || parsed.password) throw invalidUrl("credentials are not allowed in the URL");
  if (!deps.outbound) throw unavailable();
  try {
    await deps.outbound.check(url);
  } catch (err) {
    if (err instanceof OutboundError) {
      const why: Record<string, string> = {
        url: "only https URLs of public hosts are accepted",
        address: "its host resolves to an address that is not public",
        unpinnable: "this server cannot connect to it safely",
        timeout: "its host did not resolve in time",
        too_large: "it could not be checked",
        network: "its host does not resolve",
      };
      throw invalidUrl(why[err.reason] ?? "it is refused");
    }
    throw err;
  }
  return url;
}

/** Registers an endpoint; its secret is shown here only (and on rotation). */
export function registerEndpoint(
  deps: OperationDeps,
  meterer: Meterer,
  input: { url?: unknown; events?: unknown },
): Promise<Outcome<{ data: Endpoint & { secret: string }; metered: Metered }>> {
  return outcomeOf(async () => {
    const metered = await meterer.meter({ route: WEBHOOKS_ROUTE, weight: 0, needsCredits: false });
    const events = eventsOf(input.events);
    const url = await checkUrl(deps, input.url);
    const secret = newEndpointSecret();
    const sealed = await deps.webhookSecrets.seal(secret);
    const now = deps.now();
    const row = await deps.db.transaction(async (tx) => {
      await tx.query(sql("account_lock"), [metered.accountId]);
      const [inserted] = await tx.query<EndpointRow>(sql("webhook_endpoints_insert"), [
        crypto.randomUUID(),
        metered.accountId,
        url,
        events,
        sealed,
        now,
        ENDPOINTS_MAX,
      ]);
      return inserted;
    });
    if (!row) throw new ApiError(409, "WEBHOOK_LIMIT", `An account has at most ${ENDPOINTS_MAX} webhook endpoints: delete one first`);
    return { data: { ...endpointJson(row), secret }, metered };
  });
}

export function listEndpoints(deps: OperationDeps, meterer: Meterer): Promise<Outcome<{ data: Endpoint[]; metered: Metered }>> {
  return outcomeOf(async () => {
    const metered = await meterer.meter({ route: WEBHOOKS_ROUTE, weight: 0, needsCredits: false });
    const rows = await deps.db.query<EndpointRow>(sql("webhook_endpoints_select_by_account"), [metered.accountId]);
    return { data: rows.map(endpointJson), metered };
  });
}

export function deleteEndpoint(deps: OperationDeps, meterer: Meterer, input: { id: string }): Promise<Outcome<{ metered: Metered }>> {
  return outcomeOf(async () => {
    const metered = await meterer.meter({ route: WEBHOOK_ROUTE, weight: 0, needsCredits: false });
    const id = input.id.toLowerCase();
    const deleted = UUID.test(id) && (await deps.db.query(sql("webhook_endpoints_delete"), [id, metered.accountId, deps.now()])).length > 0;
    if (!deleted) throw notFound(id);
    return { metered };
  });
}

export function rotateSecret(deps: OperationDeps, meterer: Meterer, input: { id: string }): Promise<Outcome<{ data: { secret: string }; metered: Metered }>> {
  return outcomeOf(async () => {
    const metered = await meterer.meter({ route: WEBHOOK_ROTATE_ROUTE, weight: 0, needsCredits: false });
    const id = input.id.toLowerCase();
    if (!UUID.test(id)) throw notFound(id);
    const secret = newEndpointSecret();
    const until = new Date(deps.now().getTime() + ROTATION_OVERLAP_MS);
    const rotated = await deps.db.query(sql("webhook_endpoints_rotate"), [id, metered.accountId, await deps.webhookSecrets.seal(secret), until]);
    if (rotated.length === 0) throw notFound(id);
    return { data: { secret }, metered };
  });
}

export interface DeliveryJson {
  id: string;
  event_id: string;
  type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  created_at: string;
  next_attempt_at: string | null;
  delivered_at: string | null;
}

type DeliveryRow = Omit<DeliveryJson, "created_at" | "next_attempt_at" | "delivered_at"> & {
  created_at: Date;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
};

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/** The delivery log of one endpoint, newest first; `after` is the position the cursor carries. */
export function endpointDeliveries(
  deps: OperationDeps,
  meterer: Meterer,
  input: { id: string; after?: { at: string; id: string } },
): Promise<Outcome<{ data: DeliveryJson[]; next?: { at: string; id: string }; metered: Metered }>> {
  return outcomeOf(async () => {
    const metered = await meterer.meter({ route: WEBHOOK_DELIVERIES_ROUTE, weight: 0, needsCredits: false });
    const id = input.id.toLowerCase();
    if (!UUID.test(id)) throw notFound(id);
    const [endpoint] = await deps.db.query(sql("webhook_endpoints_select_one"), [id, metered.accountId]);
    if (!endpoint) throw notFound(id);
    const rows = await deps.db.query<DeliveryRow>(sql("webhook_deliveries_select_page"), [
      id,
      metered.accountId,
      input.after?.at ?? null,
      input.after?.id ?? null,
      DELIVERIES_PAGE + 1,
    ]);
    const data = rows.slice(0, DELIVERIES_PAGE).map((r) => ({
      id: r.id,
      event_id: r.event_id,
      type: r.type,
      status: r.status,
      attempts: r.attempts,
      last_status_code: r.last_status_code,
      created_at: iso(r.created_at)!,
      next_attempt_at: r.status === "pending" ? iso(r.next_attempt_at) : null,
      delivered_at: iso(r.delivered_at),
    }));
    const last = data.at(-1);
    return { data, next: rows.length > DELIVERIES_PAGE && last ? { at: last.created_at, id: last.id } : undefined, metered };
  });
}

/** Sends a delivery's event again (same webhook-id), as a new delivery of the same endpoint. */
export function redeliver(
  deps: OperationDeps,
  meterer: Meterer,
  input: { id: string; deliveryId: string },
): Promise<Outcome<{ data: { id: string; event_id: string; status: string; created_at: string }; metered: Metered }>> {
  return outcomeOf(async () => {
    const metered = await meterer.meter({ route: WEBHOOK_REDELIVER_ROUTE, weight: 0, needsCredits: false });
    const id = input.id.toLowerCase();
    const deliveryId = input.deliveryId.toLowerCase();
    if (!UUID.test(id)) throw notFound(id);
    const [endpoint] = await deps.db.query<{ enabled: boolean }>(sql("webhook_endpoints_select_one"), [id, metered.accountId]);
    if (!endpoint) throw notFound(id);
    if (!endpoint.enabled) throw new ApiError(409, "WEBHOOK_DISABLED", "This endpoint is disabled (its receiver answered 410 Gone): register it again to receive events");
    if (!deps.outbound) throw unavailable();
    const now = deps.now();
    const rows = UUID.test(deliveryId)
      ? await deps.db.transaction(async (tx) => {
          const inserted = await tx.query<{ id: string; event_id: string; status: string; created_at: Date }>(sql("webhook_deliveries_redeliver"), [
            deliveryId,
            id,
            metered.accountId,
            now,
            crypto.randomUUID(),
          ]);
          if (inserted.length > 0) await tx.query(sql("jobs_notify"), [WEBHOOKS_CHANNEL]);
          return inserted;
        })
      : [];
    if (rows.length === 0) throw new ApiError(404, "DELIVERY_NOT_FOUND", `Delivery not found: ${deliveryId.slice(0, 60)} is not a delivery of this endpoint`);
    const [row] = rows;
    return { data: { id: row.id, event_id: row.event_id, status: row.status, created_at: iso(row.created_at)! }, metered };
  });
}
