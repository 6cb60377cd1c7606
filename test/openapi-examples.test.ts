// The response examples of the OpenAPI document are real responses: this test sends the request
// example of every operation to a server holding the fixture index (one step where one step
// answers; the OAuth consent, code exchange and revocation, and an x402 purchase through the local
// facilitator and a key recovery, as flows), normalises the volatile values (times, ids, keys,
// codes, cursors, transaction hashes, signatures), and compares the result with what
// src/openapi/recorded-examples.json holds. UPDATE_EXAMPLES=1 rewrites that file instead.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { privateKeyToAccount } from "viem/accounts";
import { startFacilitator, type Facilitator } from "../scripts/facilitator.ts";
import { examplePath, RECORDED_EXAMPLES, REQUEST_EXAMPLES, type RecordedExample, type RequestExample } from "../src/openapi/examples.ts";
import type { Operation } from "../src/openapi/operation.ts";
import { OPERATIONS } from "../src/app.ts";
import { openTestDatabase, type TestDatabase } from "./support/db.ts";
import { loadFixtures } from "./support/fixtures.ts";
import { ROOT } from "./support/process.ts";
import { createClock, createCustomer, startServer, type TestServer } from "./support/server.ts";
import { newBuyer, PAY_TO } from "./x402/support.ts";
import { OutboundError, type Outbound } from "../src/http/outbound.ts";

/** Accepts the example's webhook host at registration; nothing is delivered in this test. */
const EXAMPLE_OUTBOUND: Outbound = {
  check: async (url) => {
    if (new URL(url).hostname !== "hooks.example.com") throw new OutboundError("address", "not the example's host");
  },
  send: async () => {
    throw new OutboundError("network", "this test delivers nothing");
  },
};

const START = "2026-11-20T12:00:30Z";

/** The operations whose example request answers in one step, in the order they are sent. */
const ONE_STEP = [
  "lookupWallet",
  "lookupBatch",
  "estimateList",
  "reverseTwitter",
  "reverseFarcaster",
  "submitJob",
  "jobStatus",
  "indexStats",
  "accountUsage",
  "listConnections",
  "watchWallets",
  "watchlist",
  "unwatchWallets",
  "protectedResourceMetadataMcp",
  "protectedResourceMetadata",
  "authorizationServerMetadata",
  "registerClient",
  "mcp",
  "health",
];

/** Operations shown without a recorded response example, and why; every other one has one. */
const NOT_RECORDED: Record<string, string> = {
  // the answer is this very document: an example of it inside itself would have to contain itself
  openapiDocument: "the document itself",
  // served as written in src/rest/opt-out-page.ts; an excerpt of code would show nothing an answer does
  optOutScript: "a script, not an answer",
};

/**
 * The wallet the purchase and the recovery are made with: the first account of the usual
 * development mnemonic (Hardhat, Anvil), whose key is public, so its address and signatures are
 * the same every run. It holds nothing anywhere that matters.
 */
const BUYER = privateKeyToAccount("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80");

/** The headers a recorded example shows, where the operation declares them. */
const SHOWN_HEADERS = ["Location", "Cache-Control", "PAYMENT-REQUIRED", "PAYMENT-RESPONSE"];

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const UUIDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** The same response every run: times, ids, secrets, cursors and hashes replaced by fixed stand-ins. */
function normalise(value: unknown, key = ""): unknown {
  if (Array.isArray(value)) return value.map((v) => normalise(v));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalise(v, k)]));
  }
  if (typeof value === "string") {
    if (TIMESTAMP.test(value)) return "2026-11-20T12:00:30.000Z";
    // an opt-out challenge's EIP-4361 message: its nonce is random
    if (key === "message" && /\nNonce: /.test(value)) return value.replace(/\nNonce: \w+/, "\nNonce: <nonce>");
    if (value.replace(UUIDS, "") !== value) return value.replace(UUIDS, "6f1c2a54-3b1e-4e8a-9d2f-0c4b7a1e5d93");
    if (/^wid_[a-z]+_/.test(value)) return `${value.slice(0, value.indexOf("_", 4) + 1)}…`;
    if (value.startsWith("whsec_")) return "whsec_…";
    if (/cursor/.test(key)) return "<cursor>";
    // a transaction hash, or a recovery challenge's signed token
    if (/^0x[0-9a-f]{64}$/.test(value) || key === "token") return `<${key || "hash"}>`;
    if (key === "text") {
      try {
        return JSON.stringify(normalise(JSON.parse(value)));
      } catch {
        return value;
      }
    }
  }
  if (typeof value === "number" && /_at$|issued_at|latency/.test(key)) return 0;
  return value;
}

/** The part of an HTML page worth showing: its <main> (the consent page) or <header> (/docs), secrets replaced. */
function htmlExcerpt(html: string): string {
  const part = /<main>[\s\S]*<\/main>|<header>[\s\S]*?<\/header>/.exec(html)?.[0] ?? "";
  return part.replace(/(name="(?:consent|csrf)" value=")[^"]*/g, "$1…");
}

/**
 * The metrics exposition is mostly latencies, and gauges that follow the job worker: the excerpt
 * is the request counter, which counts exactly the requests this test sent before it.
 */
function metricsExcerpt(text: string): string {
  return text
    .split("\n")
    .filter((line) => /^(# (HELP|TYPE) )?walletid_http_requests_total\b/.test(line))
    .join("\n");
}

let database: TestDatabase & { close(): Promise<void> };
let facilitator: Facilitator;
let server: TestServer;
let apiKey: string;

before(async () => {
  database = await openTestDatabase("pglite");
  await loadFixtures(database.db, new Date(START));
  facilitator = await startFacilitator();
  // selling through the local facilitator, and counting requests (the metrics example shows the count)
  server = await startServer(database.db, { clock: createClock(START), env: { X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: PAY_TO, METRICS: "on" }, app: { outbound: EXAMPLE_OUTBOUND } });
  ({ apiKey } = await createCustomer(database.db, { packs: [{ pack: "Agent", quantity: 10 }], now: new Date(START) }));
});
after(async () => {
  await server.close();
  await facilitator.close();
  await database.close();
});

function operation(operationId: string): Operation {
  const op = OPERATIONS.find((o) => o.operationId === operationId);
  assert.ok(op, operationId);
  return op;
}

/** The request example of an operation, sent; what `override` gives replaces the example's own (params: by name). */
async function send(operationId: string, override: RequestExample = {}, fetcher: typeof fetch = fetch): Promise<Response> {
  const op = operation(operationId);
  const example = REQUEST_EXAMPLES[operationId];
  assert.ok(example, `${operationId} has a request example`);
  const path = examplePath(op, { ...example, params: { ...example.params, ...override.params }, query: override.query ?? example.query });
  const headers = new Headers(override.headers ?? example.headers);
  if ((op.auth || op.optionalAuth) && !headers.has("Authorization")) headers.set("Authorization", `Bearer ${apiKey}`);
  const body = override.body ?? example.body;
  const form = override.form ?? example.form;
  if (body !== undefined) headers.set("Content-Type", "application/json");
  if (form !== undefined) headers.set("Content-Type", "application/x-www-form-urlencoded");
  return await fetcher(`${server.url}${op.site ? "" : "/api/v1"}${path}`, {
    method: op.method.toUpperCase(),
    headers,
    redirect: "manual",
    body: body !== undefined ? JSON.stringify(body) : form !== undefined ? new URLSearchParams(form) : undefined,
  });
}

/** A response as its example shows it: status, the declared headers worth showing, the body normalised. */
async function recordResponse(operationId: string, res: Response, expected: number): Promise<RecordedExample> {
  const op = operation(operationId);
  const text = await res.text();
  assert.equal(res.status, expected, `${operationId}: ${res.status} ${text.slice(0, 2000)}`);
  const declared = res.status === op.success.status ? op.success.headers : op.errors.find((e) => e.status === res.status)?.headers;
  const headers: Record<string, unknown> = {};
  for (const name of SHOWN_HEADERS.filter((h) => declared?.includes(h))) {
    const value = res.headers.get(name);
    if (value === null) continue;
    // the x402 headers are base64 JSON: recorded decoded, so that the example can be read; a
    // redirect's one-time code is replaced
    headers[name] = name === "PAYMENT-REQUIRED"
      ? normalise(decodePaymentRequiredHeader(value))
      : name === "PAYMENT-RESPONSE"
        ? normalise(decodePaymentResponseHeader(value))
        : value.replace(/([?&]code=)[^&]+/, "$1…");
  }
  const type = res.headers.get("content-type") ?? "";
  const body = text === "" ? undefined : type.startsWith("application/json") ? normalise(JSON.parse(text)) : type.startsWith("text/html") ? htmlExcerpt(text) : metricsExcerpt(text);
  return { status: res.status, ...(Object.keys(headers).length > 0 ? { headers } : {}), ...(body !== undefined ? { body } : {}), ...(typeof body === "string" ? { excerpt: true } : {}) };
}

test("every recorded response example is what the server answers to its request example", async () => {
  const recorded: Record<string, RecordedExample[]> = {};
  const record = async (operationId: string, res: Response, expected: number) => (recorded[operationId] ??= []).push(await recordResponse(operationId, res, expected));

  let jobId = "";
  let clientId = "";
  for (const operationId of ONE_STEP) {
    const res = await send(operationId, operationId === "jobStatus" ? { params: { id: jobId } } : {});
    const body = (await res.clone().json()) as { data?: { job_id?: string }; client_id?: string };
    if (operationId === "submitJob") jobId = body.data?.job_id ?? "";
    if (operationId === "registerClient") clientId = body.client_id ?? "";
    await record(operationId, res, operation(operationId).success.status);
  }

  // OAuth: the consent page for the client registered above, approved with the API key, the code
  // exchanged with the PKCE verifier of the examples (RFC 7636's own pair); twice, so that one
  // connection is revoked by its refresh token and the other disconnected with the API key
  const site = server.config.publicUrl;
  const connect = async (recording: boolean) => {
    const query = Object.fromEntries(Object.entries(REQUEST_EXAMPLES.authorize.query!).map(([k, v]) => [k, k === "client_id" ? clientId : v.replace("{site_url}", site)]));
    const page = await send("authorize", { query });
    const html = await page.clone().text();
    const hidden = Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2]]));
    const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
    const approved = await send("authorizeDecision", { form: { ...hidden, api_key: apiKey, decision: "approve" }, headers: { Cookie: cookie } });
    const code = new URL(approved.headers.get("location") ?? "about:blank").searchParams.get("code") ?? "";
    const tokens = await send("token", { form: { ...REQUEST_EXAMPLES.token.form, code, client_id: clientId } });
    const { refresh_token } = (await tokens.clone().json()) as { refresh_token: string };
    if (recording) {
      await record("authorize", page, 200);
      await record("authorizeDecision", approved, 303);
      await record("token", tokens, 200);
    }
    return refresh_token;
  };
  const refresh = await connect(true);
  await record("revokeToken", await send("revokeToken", { form: { token: refresh, client_id: clientId } }), 200);
  await connect(false);
  const connections = (await (await send("listConnections")).json()) as { data: Array<{ id: string }> };
  assert.equal(connections.data.length, 1, "the revoked connection is gone, the second is listed");
  await record("disconnect", await send("disconnect", { params: { id: connections.data[0].id } }), 200);

  // x402: the unpaid request's challenge, then the same request paid by the official client
  // through the local facilitator, then a recovery of a key by the paying wallet's signature
  // (without the example's placeholder PAYMENT-SIGNATURE: the paying client sends the real one)
  await record("buyCredits", await send("buyCredits", { headers: {} }), 402);
  const buyer = await newBuyer(facilitator, 5, BUYER);
  await record("buyCredits", await send("buyCredits", { headers: {} }, buyer.pay), 200);
  const challengeRes = await send("recoveryChallenge");
  const challenge = (await challengeRes.clone().json()) as { message: string; issued_at: string; token: string };
  await record("recoveryChallenge", challengeRes, 200);
  const signature = await BUYER.signMessage({ message: challenge.message });
  const recoverBody = { ...(REQUEST_EXAMPLES.recoverKey.body as object), issued_at: challenge.issued_at, token: challenge.token, signature };
  await record("recoverKey", await send("recoverKey", { body: recoverBody }), 200);

  // opt-out: the challenge for the same wallet, signed, sent back; and the page
  const optOutRes = await send("optOutChallenge");
  const optOutChallenge = (await optOutRes.clone().json()) as { message: string };
  await record("optOutChallenge", optOutRes, 200);
  const optOutSignature = await BUYER.signMessage({ message: optOutChallenge.message });
  await record("optOut", await send("optOut", { body: { message: optOutChallenge.message, signature: optOutSignature } }), 200);
  await record("optOutPage", await send("optOutPage"), 200);
  // webhooks: an endpoint registered and listed, a job's event in its delivery log, redelivered,
  // the secret rotated, the endpoint deleted
  const registered = await send("registerWebhook");
  const endpointId = ((await registered.clone().json()) as { data: { id: string } }).data.id;
  await record("registerWebhook", registered, 201);
  await record("listWebhooks", await send("listWebhooks"), 200);
  assert.equal((await send("submitJob")).status, 202);
  const log = await send("webhookDeliveries", { params: { id: endpointId } });
  const deliveryId = ((await log.clone().json()) as { data: Array<{ id: string }> }).data[0].id;
  await record("webhookDeliveries", log, 200);
  await record("redeliverWebhook", await send("redeliverWebhook", { params: { id: endpointId, delivery_id: deliveryId } }), 202);
  await record("rotateWebhookSecret", await send("rotateWebhookSecret", { params: { id: endpointId } }), 200);
  await record("deleteWebhook", await send("deleteWebhook", { params: { id: endpointId } }), 204);

  // the pages and the exposition: short excerpts
  await record("apiReference", await send("apiReference"), 200);
  await record("metrics", await send("metrics"), 200);

  if (process.env.UPDATE_EXAMPLES === "1") {
    const file = {
      $comment: "Real responses to the request examples of src/openapi/examples.ts, volatile values (times, ids, keys, "
        + "codes, cursors, hashes) normalised, by operationId. Written by `UPDATE_EXAMPLES=1 node --import tsx --test "
        + "test/openapi-examples.test.ts` and checked by that test without UPDATE_EXAMPLES; do not edit by hand.",
      examples: recorded,
    };
    writeFileSync(join(ROOT, "src/openapi/recorded-examples.json"), `${JSON.stringify(file, null, 2)}\n`);
    return;
  }
  for (const operationId of Object.keys(recorded)) {
    assert.deepEqual(recorded[operationId], RECORDED_EXAMPLES[operationId], `the example of ${operationId} no longer matches the server (rerun with UPDATE_EXAMPLES=1 if the change is intended)`);
  }
  assert.deepEqual(Object.keys(RECORDED_EXAMPLES).sort(), Object.keys(recorded).sort(), "no example is recorded for an operation this test does not send");
});

test("the document carries a curl request example and a recorded response example for every operation, or says why not", async () => {
  const doc = (await (await server.request("/api/v1/openapi.json")).json()) as { paths: Record<string, Record<string, any>> };
  let operations = 0;
  for (const item of Object.values(doc.paths)) {
    for (const method of ["get", "post", "delete"]) {
      const op = item[method];
      if (!op) continue;
      operations++;
      const curl = op["x-codeSamples"]?.find((s: { label: string }) => s.label === "curl")?.source as string | undefined;
      assert.match(curl ?? "", new RegExp(`^curl${method === "get" ? "" : ` -X ${method.toUpperCase()}`} 'http`), `${op.operationId} has a curl example`);
      const examples = RECORDED_EXAMPLES[op.operationId];
      if (op.operationId in NOT_RECORDED) {
        assert.equal(examples, undefined, `${op.operationId} is listed as not recorded`);
        continue;
      }
      assert.ok(examples?.length, `${op.operationId} has a recorded response example or is listed in NOT_RECORDED with a reason`);
      for (const example of examples) {
        const response = op.responses[String(example.status)];
        assert.ok(response, `${op.operationId} documents the status ${example.status} of its example`);
        if (example.body !== undefined) {
          const [content] = Object.values(response.content ?? {}) as any[];
          assert.deepEqual(content?.examples?.recorded?.value, example.body, `${op.operationId} shows the body of its ${example.status} example`);
        }
        for (const [name, value] of Object.entries(example.headers ?? {})) {
          const shown = response.headers?.[name]?.examples?.recorded;
          assert.ok(shown, `${op.operationId} shows its ${example.status} example's ${name}`);
          if (typeof value === "string") assert.equal(shown.value, value);
          else assert.deepEqual(JSON.parse(Buffer.from(shown.value, "base64").toString()), value, `${name} is base64 of the recorded JSON`);
        }
      }
    }
  }
  assert.equal(operations, OPERATIONS.length);
  const page = await (await server.request("/docs")).text();
  assert.match(page, /<pre class="curl">curl /);
  assert.match(page, /Example \(a real response, recorded by the test suite\)/);
  assert.match(page, /Example \(an excerpt of a real response, recorded by the test suite\)/);
  assert.match(page, /Example <code>Location<\/code>: <code>http:\/\/127\.0\.0\.1:33418\/callback\?code=…&#38;state=af0ifjsldkj/);
  assert.match(page, /<section class="schema" id="schema-WalletRecord">/);
  assert.match(page, /nav\{[^}]*position:sticky/);
});
