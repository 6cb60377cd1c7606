// The Farcaster hub HTTP API (wire format: the hub's OpenAPI document, docs/operating.md): the
// reads the backfill and the follower make, each with a timeout, retried on 429, 5xx and network
// failures with backoff that honours Retry-After, at most `concurrency` requests at once.
import { parseHubEvent, type HubEvent, type HubMessage } from "./messages.ts";

export interface HubClientOptions {
  baseUrl: string;
  /** Sent as x-api-key (a provider's hub); a self-run hub needs none. */
  apiKey?: string;
  timeoutMs?: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /** Attempts after the first, for a 429, a 5xx, a timeout or a refused connection. */
  retries?: number;
  /** The first retry's wait; each further one doubles it, up to maxBackoffMs. */
  backoffMs?: number;
  maxBackoffMs?: number;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  signal?: AbortSignal;
}

/** The hub could not answer (after retries), or answered something that is not its format. */
export class HubError extends Error {
  constructor(message: string, readonly status?: number) {
    super(message);
  }
}

export interface FidsPage {
  fids: number[];
  /** Empty: the last page. */
  nextPageToken: string;
}

export interface EventsPage {
  events: HubEvent[];
  nextPageEventId: bigint;
}

export interface HubClient {
  /** The shards that hold fids: 1 to numShards (a hub without shards: [0], paged without shard_id). */
  shards(): Promise<number[]>;
  fids(shard: number, pageToken: string, pageSize: number): Promise<FidsPage>;
  /** Every verification message of the fid (all pages). */
  verifications(fid: number): Promise<HubMessage[]>;
  /** The fid's USER_DATA_TYPE_USERNAME value, or undefined when it has none. */
  username(fid: number): Promise<string | undefined>;
  /** Follow links to the fid when they fit in one page of `limit`, else undefined (too costly to count). */
  followers(fid: number, limit: number): Promise<number | undefined>;
  events(fromEventId: bigint): Promise<EventsPage>;
  /** Requests sent (retries included), for the bench and the admin summary. */
  readonly requests: number;
  readonly retried: number;
}

const MAX_RETRY_AFTER_MS = 60_000;

/** Retry-After as seconds or an HTTP date, in ms; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Math.min(Number(value.trim()) * 1000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}

/** A counting semaphore: at most `limit` holders at once, the rest queued in order. */
function semaphore(limit: number): <T>(work: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async (work) => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

function sleeper(signal?: AbortSignal): (ms: number) => Promise<void> {
  return (ms) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      }
      signal?.addEventListener("abort", done, { once: true });
    });
}

// Event ids are uint64: read them as text before JSON.parse turns them into doubles.
const EVENT_ID_FIELDS = /"(id|nextPageEventId)"\s*:\s*(\d+)/g;

export function createHubClient(options: HubClientOptions): HubClient {
  const base = options.baseUrl.replace(/\/+$/, "");
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const retries = options.retries ?? 6;
  const backoffMs = options.backoffMs ?? 250;
  const maxBackoffMs = options.maxBackoffMs ?? 10_000;
  const sleep = options.sleep ?? sleeper(options.signal);
  const limit = semaphore(Math.max(1, options.concurrency ?? 16));
  const headers: Record<string, string> = { accept: "application/json" };
  if (options.apiKey) headers["x-api-key"] = options.apiKey;
  const counts = { requests: 0, retried: 0 };
  const inFlight = new Set<AbortController>();
  options.signal?.addEventListener("abort", () => {
    for (const controller of inFlight) controller.abort();
  }, { once: true });

  /** GET path?query: the body text of a 200, undefined for a `not_found` answer, else HubError. */
  async function get(path: string, query: Record<string, string | number | undefined>): Promise<string | undefined> {
    const params = new URLSearchParams();
    for (const [k, value] of Object.entries(query)) if (value !== undefined && value !== "") params.set(k, String(value));
    const url = `${base}${path}?${params}`;
    for (let attempt = 0; ; attempt++) {
      if (options.signal?.aborted) throw new HubError("stopped");
      let wait: number | undefined;
      let failure: string;
      let status: number | undefined;
      try {
        const res = await limit(async () => {
          counts.requests++;
          // one controller a request, aborted by its timer or (through `inFlight`) the caller's
          // signal, which carries one listener whatever the concurrency
          const controller = new AbortController();
          const timer = setTimeout(() => controller.abort(new DOMException("timed out", "TimeoutError")), timeoutMs);
          inFlight.add(controller);
          try {
            const r = await doFetch(url, { headers, signal: controller.signal });
            return { status: r.status, retryAfter: r.headers.get("retry-after"), text: await r.text() };
          } catch (error) {
            throw controller.signal.reason instanceof DOMException && controller.signal.reason.name === "TimeoutError" ? controller.signal.reason : error;
          } finally {
            clearTimeout(timer);
            inFlight.delete(controller);
          }
        });
        if (res.status === 200) return res.text;
        status = res.status;
        if (isNotFound(res.status, res.text)) return undefined;
        failure = `the hub answered ${res.status} to ${path}`;
        if (res.status !== 429 && res.status < 500) throw new HubError(failure, res.status);
        wait = retryAfterMs(res.retryAfter);
      } catch (error) {
        if (error instanceof HubError) throw error;
        if (options.signal?.aborted) throw new HubError("stopped");
        failure = `the hub did not answer ${path} (${(error as Error).name === "TimeoutError" ? `no answer in ${timeoutMs} ms` : "connection failed"})`;
      }
      if (attempt >= retries) throw new HubError(`${failure} (after ${attempt + 1} attempts)`, status);
      counts.retried++;
      await sleep(wait ?? Math.min(maxBackoffMs, backoffMs * 2 ** attempt) * (0.5 + Math.random() / 2));
    }
  }

  async function getJson(path: string, query: Record<string, string | number | undefined>): Promise<Record<string, unknown> | undefined> {
    const text = await get(path, query);
    if (text === undefined) return undefined;
    try {
      const body = JSON.parse(path === "/v1/events" ? text.replace(EVENT_ID_FIELDS, '"$1":"$2"') : text) as unknown;
      if (typeof body === "object" && body !== null && !Array.isArray(body)) return body as Record<string, unknown>;
    } catch {
      // falls through
    }
    throw new HubError(`the hub answered ${path} with a body that is not a JSON object`);
  }

  /** Every message of a paged message list. */
  async function allMessages(path: string, query: Record<string, string | number>): Promise<HubMessage[]> {
    const out: HubMessage[] = [];
    let pageToken = "";
    for (let page = 0; page < 1000; page++) {
      const body = await getJson(path, { ...query, pageToken });
      if (!body) return out;
      out.push(...messagesOf(body, path));
      pageToken = tokenOf(body);
      if (pageToken === "") return out;
    }
    throw new HubError(`the hub kept answering more pages of ${path}`);
  }

  return {
    get requests() {
      return counts.requests;
    },
    get retried() {
      return counts.retried;
    },
    async shards() {
      const body = await getJson("/v1/info", { dbstats: "false" });
      if (!body) throw new HubError("the hub answered /v1/info with not_found");
      const n = body.numShards;
      if (n === undefined) return [0];
      if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 1024) throw new HubError("the hub's /v1/info has no usable numShards");
      return Array.from({ length: n }, (_, i) => i + 1);
    },
    async fids(shard, pageToken, pageSize) {
      const body = await getJson("/v1/fids", { shard_id: shard === 0 ? undefined : shard, pageSize, pageToken });
      if (!body || !Array.isArray(body.fids)) throw new HubError("the hub answered /v1/fids without fids");
      const fids = body.fids.filter((f): f is number => typeof f === "number" && Number.isSafeInteger(f) && f > 0);
      return { fids, nextPageToken: tokenOf(body) };
    },
    verifications: (fid) => allMessages("/v1/verificationsByFid", { fid, pageSize: 100 }),
    async username(fid) {
      const body = await getJson("/v1/userDataByFid", { fid, user_data_type: "USER_DATA_TYPE_USERNAME" });
      if (!body) return undefined;
      // one UserDataAdd, or (a hub that ignores the type) a page of them
      const messages = Array.isArray(body.messages) ? messagesOf(body, "/v1/userDataByFid") : [body as HubMessage];
      let found: { value: string; timestamp: number } | undefined;
      for (const m of messages) {
        const body = m?.data?.userDataBody;
        if (m?.data?.type !== "MESSAGE_TYPE_USER_DATA_ADD" || body?.type !== "USER_DATA_TYPE_USERNAME" || typeof body.value !== "string") continue;
        const timestamp = typeof m.data.timestamp === "number" ? m.data.timestamp : 0;
        if (!found || timestamp >= found.timestamp) found = { value: body.value, timestamp };
      }
      return found?.value || undefined;
    },
    async followers(fid, limitCount) {
      const body = await getJson("/v1/linksByTargetFid", { target_fid: fid, link_type: "follow", pageSize: limitCount });
      if (!body) return 0;
      if (tokenOf(body) !== "") return undefined;
      return messagesOf(body, "/v1/linksByTargetFid").filter((m) => m?.data?.type === "MESSAGE_TYPE_LINK_ADD").length;
    },
    async events(fromEventId) {
      const body = await getJson("/v1/events", { from_event_id: fromEventId.toString() });
      if (!body || !Array.isArray(body.events)) throw new HubError("the hub answered /v1/events without events");
      const events: HubEvent[] = [];
      for (const raw of body.events) {
        const event = parseHubEvent(raw);
        if (event) events.push(event);
      }
      const next = body.nextPageEventId;
      const nextPageEventId = typeof next === "string" && /^\d+$/.test(next) ? BigInt(next) : typeof next === "number" ? BigInt(Math.trunc(next)) : 0n;
      return { events, nextPageEventId };
    },
  };
}

function isNotFound(status: number, text: string): boolean {
  if (status === 404) return true;
  if (status !== 400) return false;
  try {
    const body = JSON.parse(text) as { errCode?: unknown; name?: unknown };
    return String(body.errCode ?? "").includes("not_found") || String(body.name ?? "").includes("not_found");
  } catch {
    return false;
  }
}

function messagesOf(body: Record<string, unknown>, path: string): HubMessage[] {
  if (!Array.isArray(body.messages)) throw new HubError(`the hub answered ${path} without messages`);
  return body.messages as HubMessage[];
}

function tokenOf(body: Record<string, unknown>): string {
  return typeof body.nextPageToken === "string" ? body.nextPageToken : "";
}
