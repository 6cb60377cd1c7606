// What the OAuth functions are handed: built once in createApp from its deps and config.
import type { Log } from "../observe/log.ts";
import type { Db } from "../db/types.ts";
import type { Outbound } from "../http/outbound.ts";

export interface OAuthDeps {
  db: Db;
  now: () => Date;
  log: Log;
  /** `{site_url}`, exactly as the metadata's `issuer` and every redirect's `iss`. */
  issuer: string;
  /** `{site_url}/mcp`: the one resource tokens are issued for. */
  resource: string;
  /** The one hosted-client domain whose callback receives errors and declines. */
  trustedCallbackHost?: string;
  /** Fetches metadata documents (src/http/outbound.ts); without it, URL client ids are refused. */
  outbound?: Outbound;
  /** The client's IP address (registrations are limited per address), from the request and the runtime's env. */
  clientAddress: (req: Request, env: unknown) => string;
}

export const CODE_TTL_MS = 60_000;
export const ACCESS_TTL_MS = 3_600_000;
export const ROTATION_GRACE_MS = 30_000;
export const CONSENT_TTL_MS = 10 * 60_000;
export const DOCUMENT_CACHE_MS = 24 * 3_600_000;
export const DOCUMENT_TIMEOUT_MS = 5_000;
export const DOCUMENT_MAX_BYTES = 64 * 1024;
export const SCOPE = "mcp";

/** Registrations and consent pages per IP address per hour; token requests per connection per minute. */
export const REGISTRATIONS_PER_HOUR = 20;
export const CONSENT_PAGES_PER_HOUR = 120;
export const TOKEN_REQUESTS_PER_MINUTE = 30;
