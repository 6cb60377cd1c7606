// /webhooks (endpoints, rotation, delivery log, redelivery) and /watchlist: the REST face of
// src/operations/webhooks.ts and src/operations/watchlist.ts, with their OpenAPI entries.
import { Hono, type Context } from "hono";
import * as v from "valibot";
import { Address } from "../index/address.ts";
import { readAtMost, readWalletList, tooLarge } from "../http/body.ts";
import { fromBase64Url, invalidCursor, toBase64Url } from "../http/cursor.ts";
import { ApiError } from "../http/errors.ts";
import { refusal } from "../http/meter.ts";
import { requestMeterer } from "../http/request-meter.ts";
import type { Operation } from "../openapi/operation.ts";
import { meterDeps, type OperationDeps } from "../operations/deps.ts";
import {
  deleteEndpoint,
  endpointDeliveries,
  EVENT_TYPES,
  listEndpoints,
  redeliver,
  registerEndpoint,
  rotateSecret,
  WEBHOOK_DELIVERIES_ROUTE,
  WEBHOOKS_ROUTE,
} from "../operations/webhooks.ts";
import { unwatch, watch, WATCH_REQUEST_MAX, watchlist, WATCHLIST_ROUTE } from "../operations/watchlist.ts";

const BODY_LIMIT = 16 * 1024;
/** 1,000 addresses and their JSON punctuation. */
const WATCH_BODY_LIMIT = 64 * 1024;

const Timestamp = v.pipe(v.string(), v.isoTimestamp(), v.description("ISO 8601 timestamp in UTC"));
const EventType = v.picklist(EVENT_TYPES);
const Endpoint = v.object({
  id: v.string(),
  url: v.string(),
  events: v.array(EventType),
  enabled: v.pipe(v.boolean(), v.description("false once its receiver answered 410 Gone")),
  created_at: Timestamp,
});
const Secret = v.pipe(v.string(), v.description("`whsec_` + base64 of 32 random bytes: the Standard Webhooks signing secret. Shown only here"));
const Delivery = v.object({
  id: v.string(),
  event_id: v.pipe(v.string(), v.description("The event's id: the `webhook-id` header of every attempt")),
  type: EventType,
  status: v.picklist(["pending", "delivered", "failed"]),
  attempts: v.number(),
  last_status_code: v.nullable(v.pipe(v.number(), v.description("The receiver's last answer; null when it did not answer"))),
  created_at: Timestamp,
  next_attempt_at: v.nullable(Timestamp),
  delivered_at: v.nullable(Timestamp),
});
const WebhookParams = v.object({ id: v.pipe(v.string(), v.description("The endpoint's id")) });
const DeliveryParams = v.object({ id: v.pipe(v.string(), v.description("The endpoint's id")), delivery_id: v.pipe(v.string(), v.description("A delivery's id from the delivery log")) });
const CursorQuery = v.object({ cursor: v.optional(v.pipe(v.string(), v.description("`meta.next_cursor` of the page before"))) });
const WatchBody = v.object({ wallets: v.pipe(v.array(Address), v.minLength(1), v.maxLength(WATCH_REQUEST_MAX), v.description("1 to 1,000 addresses")) });

const FREE = "API key only (an OAuth token cannot manage webhooks); free on both meters.";

export const webhooksOpenapi: Operation[] = [
  {
    method: "post",
    path: "/webhooks",
    operationId: "registerWebhook",
    tag: "Webhooks",
    summary: "Register a webhook endpoint",
    description: `Events are POSTed to \`url\` signed as Standard Webhooks 1.0 (\`webhook-id\`, \`webhook-timestamp\`, \`webhook-signature\`). \`url\` must be https and resolve only to public addresses, with no credentials; it is checked now and again at every connection. \`events\` defaults to all three types. At most 5 endpoints an account. The secret is shown in this answer only (and on rotation). ${FREE}`,
    auth: true,
    body: v.object({ url: v.pipe(v.string(), v.description("https URL of the receiver")), events: v.optional(v.array(EventType)) }),
    success: { status: 201, description: "The endpoint and its secret", schema: v.object({ data: v.object({ ...Endpoint.entries, secret: Secret }) }) },
    errors: [
      { status: 400, codes: ["INVALID_REQUEST", "INVALID_WEBHOOK_URL", "INVALID_PARAMETER"] },
      { status: 409, codes: ["WEBHOOK_LIMIT"] },
    ],
  },
  {
    method: "get",
    path: "/webhooks",
    operationId: "listWebhooks",
    tag: "Webhooks",
    summary: "The account's webhook endpoints",
    description: `Oldest first, without secrets. ${FREE}`,
    auth: true,
    success: { status: 200, description: "The endpoints", schema: v.object({ data: v.array(Endpoint) }) },
    errors: [],
  },
  {
    method: "delete",
    path: "/webhooks/{id}",
    operationId: "deleteWebhook",
    tag: "Webhooks",
    summary: "Delete a webhook endpoint",
    description: `Nothing more is sent to it; its pending deliveries end as failed. ${FREE}`,
    auth: true,
    params: WebhookParams,
    success: { status: 204, description: "Deleted", empty: true },
    errors: [{ status: 404, codes: ["WEBHOOK_NOT_FOUND"] }],
  },
  {
    method: "post",
    path: "/webhooks/{id}/rotate",
    operationId: "rotateWebhookSecret",
    tag: "Webhooks",
    summary: "Rotate an endpoint's secret",
    description: `A new secret signs from now on; the one it replaces keeps signing beside it for 24 hours (two \`v1,\` entries in \`webhook-signature\`), so a receiver can switch without losing events. ${FREE}`,
    auth: true,
    params: WebhookParams,
    success: { status: 200, description: "The new secret", schema: v.object({ data: v.object({ secret: Secret }) }) },
    errors: [{ status: 404, codes: ["WEBHOOK_NOT_FOUND"] }],
  },
  {
    method: "get",
    path: "/webhooks/{id}/deliveries",
    operationId: "webhookDeliveries",
    tag: "Webhooks",
    summary: "An endpoint's delivery log",
    description: `Every delivery to the endpoint, newest first, 50 a page: its event, status, attempts, the receiver's last status code and the next attempt's time. ${FREE}`,
    auth: true,
    params: WebhookParams,
    query: CursorQuery,
    success: { status: 200, description: "A page of deliveries", schema: v.object({ data: v.array(Delivery), meta: v.object({ next_cursor: v.nullable(v.string()) }) }) },
    errors: [
      { status: 400, codes: ["INVALID_CURSOR"] },
      { status: 404, codes: ["WEBHOOK_NOT_FOUND"] },
    ],
  },
  {
    method: "post",
    path: "/webhooks/{id}/deliveries/{delivery_id}/redeliver",
    operationId: "redeliverWebhook",
    tag: "Webhooks",
    summary: "Send a delivery's event again",
    description: `The same event, with the same \`webhook-id\`, as a new delivery (in the log beside the first), sent at once. ${FREE}`,
    auth: true,
    params: DeliveryParams,
    success: { status: 202, description: "The new delivery, pending", schema: v.object({ data: v.object({ id: v.string(), event_id: v.string(), status: v.literal("pending"), created_at: Timestamp }) }) },
    errors: [
      { status: 404, codes: ["WEBHOOK_NOT_FOUND", "DELIVERY_NOT_FOUND"] },
      { status: 409, codes: ["WEBHOOK_DISABLED"] },
    ],
  },
  {
    method: "post",
    path: "/watchlist",
    operationId: "watchWallets",
    tag: "Webhooks",
    summary: "Watch wallets",
    description:
      "Adds 1 to 1,000 addresses to the account's watchlist: when a watched wallet's record changes (an identity added, removed or changed, its X handle's reachability, its evidence classes), every endpoint subscribed to `wallet.changed` receives one event per wallet and cause. At most 100,000 wallets an account (`WATCHLIST_FULL`, nothing added). Watching is free and weighs 1 rate unit; an event whose record shows twitter or farcaster costs 1 match credit when it is created, and is withheld (field names only, no record) when the account has none.",
    auth: true,
    body: WatchBody,
    success: { status: 200, description: "What was added", schema: v.object({ data: v.object({ added: v.number(), already_watched: v.number(), total: v.number() }) }) },
    errors: [{ status: 400, codes: ["INVALID_REQUEST", "INVALID_ADDRESS", "WATCHLIST_FULL"] }],
  },
  {
    method: "delete",
    path: "/watchlist",
    operationId: "unwatchWallets",
    tag: "Webhooks",
    summary: "Stop watching wallets",
    description: "Removes 1 to 1,000 addresses from the watchlist; addresses not on it are ignored. Free; 1 rate unit.",
    auth: true,
    body: WatchBody,
    success: { status: 200, description: "What was removed", schema: v.object({ data: v.object({ removed: v.number(), total: v.number() }) }) },
    errors: [{ status: 400, codes: ["INVALID_REQUEST", "INVALID_ADDRESS"] }],
  },
  {
    method: "get",
    path: "/watchlist",
    operationId: "watchlist",
    tag: "Webhooks",
    summary: "The watched wallets",
    description: "In the order added, 100 a page. Free; 1 rate unit.",
    auth: true,
    query: CursorQuery,
    success: {
      status: 200,
      description: "A page of the watchlist",
      schema: v.object({
        data: v.array(v.object({ wallet: v.string(), added_at: Timestamp })),
        meta: v.object({ total: v.number(), next_cursor: v.nullable(v.string()) }),
      }),
    },
    errors: [{ status: 400, codes: ["INVALID_CURSOR"] }],
  },
];

/** A JSON object body of at most 16 KB. */
async function readObject(c: Context): Promise<Record<string, unknown>> {
  const bytes = (await readAtMost(c.req.raw, BODY_LIMIT)) ?? tooLarge("16 KB");
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new ApiError(400, "INVALID_REQUEST", "The body must be a JSON object");
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw new ApiError(400, "INVALID_REQUEST", "The body must be a JSON object");
  return body as Record<string, unknown>;
}

function encodeCursor(position: object): string {
  return toBase64Url(new TextEncoder().encode(JSON.stringify(position)));
}

/** A cursor this API issued for `keys`, or a refusal. Unsigned: it only positions within the caller's own rows. */
function decodeCursor(raw: string | undefined, keys: string[]): Record<string, string> | undefined | ApiError {
  if (raw === undefined || raw === "") return undefined;
  const bytes = fromBase64Url(raw);
  try {
    const value = bytes && JSON.parse(new TextDecoder().decode(bytes));
    if (value && keys.every((k) => typeof value[k] === "string") && !Number.isNaN(Date.parse(value.at))) return value;
  } catch {
    // refused below
  }
  return invalidCursor("it is not a cursor this API issued");
}

export function webhookRoutes(deps: OperationDeps) {
  const app = new Hono();
  const meterer = (c: Context) => requestMeterer(c, meterDeps(deps));

  app.post("/webhooks", async (c) => {
    const m = meterer(c);
    let body: Record<string, unknown>;
    try {
      body = await readObject(c);
    } catch (err) {
      if (err instanceof ApiError && err.status === 400) throw await refusal(m, WEBHOOKS_ROUTE, err);
      throw err;
    }
    const registered = await registerEndpoint(deps, m, { url: body.url, events: body.events });
    if (!registered.ok) throw registered.refusal;
    return c.json({ data: registered.data }, 201);
  });

  app.get("/webhooks", async (c) => {
    const listed = await listEndpoints(deps, meterer(c));
    if (!listed.ok) throw listed.refusal;
    return c.json({ data: listed.data });
  });

  app.delete("/webhooks/:id", async (c) => {
    const deleted = await deleteEndpoint(deps, meterer(c), { id: c.req.param("id") });
    if (!deleted.ok) throw deleted.refusal;
    return c.body(null, 204);
  });

  app.post("/webhooks/:id/rotate", async (c) => {
    const rotated = await rotateSecret(deps, meterer(c), { id: c.req.param("id") });
    if (!rotated.ok) throw rotated.refusal;
    return c.json({ data: rotated.data });
  });

  app.get("/webhooks/:id/deliveries", async (c) => {
    const m = meterer(c);
    const after = decodeCursor(c.req.query("cursor"), ["at", "id"]);
    if (after instanceof ApiError) throw await refusal(m, WEBHOOK_DELIVERIES_ROUTE, after);
    const page = await endpointDeliveries(deps, m, { id: c.req.param("id"), after: after as { at: string; id: string } | undefined });
    if (!page.ok) throw page.refusal;
    return c.json({ data: page.data, meta: { next_cursor: page.next ? encodeCursor(page.next) : null } });
  });

  app.post("/webhooks/:id/deliveries/:delivery_id/redeliver", async (c) => {
    const sent = await redeliver(deps, meterer(c), { id: c.req.param("id"), deliveryId: c.req.param("delivery_id") });
    if (!sent.ok) throw sent.refusal;
    return c.json({ data: sent.data }, 202);
  });

  const readList = async (c: Context) => {
    const m = meterer(c);
    try {
      return { m, list: await readWalletList(c.req.raw, { maxBytes: WATCH_BODY_LIMIT, label: "64 KB" }) };
    } catch (err) {
      if (err instanceof ApiError && err.status === 400) throw await refusal(m, WATCHLIST_ROUTE, err);
      throw err;
    }
  };

  app.post("/watchlist", async (c) => {
    const { m, list } = await readList(c);
    const added = await watch(deps, m, list);
    if (!added.ok) throw added.refusal;
    return c.json({ data: added.data });
  });

  app.delete("/watchlist", async (c) => {
    const { m, list } = await readList(c);
    const removed = await unwatch(deps, m, list);
    if (!removed.ok) throw removed.refusal;
    return c.json({ data: removed.data });
  });

  app.get("/watchlist", async (c) => {
    const m = meterer(c);
    const after = decodeCursor(c.req.query("cursor"), ["at", "wallet"]);
    if (after instanceof ApiError) throw await refusal(m, WATCHLIST_ROUTE, after);
    const page = await watchlist(deps, m, after as { at: string; wallet: string } | undefined);
    if (!page.ok) throw page.refusal;
    return c.json({ data: page.data, meta: { total: page.total, next_cursor: page.next ? encodeCursor(page.next) : null } });
  });

  return app;
}
