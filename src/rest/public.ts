// The public endpoints (no key, not metered): GET /healthz, GET {base_url}/openapi.json and the
// API reference page GET {site_url}/docs.
import { Hono } from "hono";
import * as v from "valibot";
import { ApiError } from "../http/errors.ts";
import { HealthResponse } from "../http/schemas.ts";
import { buildOpenApiDocument } from "../openapi/document.ts";
import { renderDocsPage } from "../openapi/docs-page.ts";
import type { Operation } from "../openapi/operation.ts";
import type { OperationDeps } from "../operations/deps.ts";

/** How long /healthz waits for the database before calling it down. */
const HEALTH_TIMEOUT_MS = 3000;

export const publicOpenapi: Operation[] = [
  {
    method: "get",
    path: "/healthz",
    site: true,
    operationId: "health",
    head: true,
    tag: "Service",
    summary: "Health check",
    description: `200 when the service can run a statement on its database within ${HEALTH_TIMEOUT_MS / 1000} seconds; 503 with Retry-After otherwise. Used by the container's HEALTHCHECK.`,
    auth: false,
    success: { status: 200, description: "The database answers", schema: HealthResponse },
    errors: [{ status: 503, codes: ["SERVICE_UNAVAILABLE"] }],
  },
  {
    method: "get",
    path: "/openapi.json",
    operationId: "openapiDocument",
    head: true,
    tag: "Service",
    summary: "This OpenAPI document",
    description: "The OpenAPI 3.1.0 description of the API (description version 1.0.0), generated from the schemas that validate requests.",
    auth: false,
    success: {
      status: 200,
      description: "An OpenAPI 3.1.0 document",
      schema: v.looseObject({ openapi: v.literal("3.1.0"), info: v.looseObject({ version: v.literal("1.0.0") }) }),
    },
    errors: [],
  },
  {
    method: "get",
    path: "/docs",
    site: true,
    operationId: "apiReference",
    head: true,
    tag: "Service",
    summary: "API reference page",
    description: "A human-readable reference of every endpoint, rendered on the server from this document; self-contained HTML with no scripts.",
    auth: false,
    success: { status: 200, description: "An HTML page", html: true },
    errors: [],
  },
];

async function databaseAnswers(deps: OperationDeps): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), HEALTH_TIMEOUT_MS);
  });
  const probe = deps.db.query("SELECT 1").then(
    () => true,
    (err: unknown) => {
      deps.log(`healthz: the database does not answer: ${err instanceof Error ? err.message : String(err)}`, "warn");
      return false;
    },
  );
  try {
    return await Promise.race([probe, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Mounted at the site root; `operations` is every operation the app serves, for the document. */
export function publicRoutes(deps: OperationDeps, operations: Operation[]) {
  const app = new Hono();
  const document = buildOpenApiDocument(operations, { publicUrl: deps.config.publicUrl, matchPrice: deps.config.upstreams.x402MatchPrice });
  const page = renderDocsPage(document);

  app.get("/healthz", async (c) => {
    if (!(await databaseAnswers(deps))) {
      throw new ApiError(503, "SERVICE_UNAVAILABLE", "The database is unavailable: retry shortly", { "Retry-After": "5" });
    }
    return c.json({ status: "ok" });
  });

  app.get("/api/v1/openapi.json", (c) => c.json(document));

  app.get("/docs", (c) => c.html(page));

  return app;
}
