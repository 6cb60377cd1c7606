// The X API v2 users lookup (GET /2/users/by?usernames=...), as the reachability re-check uses
// it: building the request is separate from reading the response, so the mapping is testable
// without a network and the task decides what to do about waits and failures.

/** Usernames per call: the endpoint's own maximum. */
export const X_USERS_PER_CALL = 100;

export type CheckedReachability = "live" | "suspended" | "deactivated";

export interface XUsersClient {
  /** Base URL of the API, e.g. https://api.x.com (X_API_URL). */
  baseUrl: string;
  /** App-only bearer token (X_BEARER_TOKEN). */
  bearerToken: string;
  fetch?: typeof fetch;
}

export interface RateLimit {
  limit?: number;
  remaining?: number;
  /** When the window resets (x-rate-limit-reset, Unix seconds). */
  resetAt?: Date;
}

export type LookupOutcome =
  | {
      ok: true;
      /** lowercased handle to what the API said about it */
      results: Map<string, CheckedReachability>;
      /** handles the API answered about in a way that says nothing about reachability */
      unresolved: string[];
      rateLimit: RateLimit;
    }
  | { ok: false; reason: "rate-limited"; rateLimit: RateLimit }
  | { ok: false; reason: "failed"; status: number; message: string };

interface XUser {
  username?: unknown;
}

interface XProblem {
  value?: unknown;
  resource_id?: unknown;
  title?: unknown;
  detail?: unknown;
  type?: unknown;
}

export function usersLookupRequest(client: XUsersClient, handles: readonly string[]): Request {
  if (handles.length === 0 || handles.length > X_USERS_PER_CALL) {
    throw new Error(`Cannot look up ${handles.length} users: one call takes 1 to ${X_USERS_PER_CALL}`);
  }
  const url = new URL("2/users/by", client.baseUrl.endsWith("/") ? client.baseUrl : `${client.baseUrl}/`);
  url.searchParams.set("usernames", handles.join(","));
  return new Request(url, { headers: { Authorization: `Bearer ${client.bearerToken}`, Accept: "application/json" } });
}

function headerNumber(headers: Headers, name: string): number | undefined {
  const text = headers.get(name);
  if (text === null || !/^\d+$/.test(text.trim())) return undefined;
  return Number(text);
}

export function rateLimitOf(headers: Headers): RateLimit {
  const reset = headerNumber(headers, "x-rate-limit-reset");
  return {
    limit: headerNumber(headers, "x-rate-limit-limit"),
    remaining: headerNumber(headers, "x-rate-limit-remaining"),
    resetAt: reset === undefined ? undefined : new Date(reset * 1000),
  };
}

/**
 * What one `errors` entry says about a username. A suspended account comes back as title
 * "Forbidden", detail "User has been suspended: [name]."; a name nobody holds (never taken, or
 * given up) as title "Not Found Error", detail "Could not find user with usernames: [name]."
 * Both carry type .../problems/resource-not-found, so the type alone cannot tell them apart.
 * Anything else (not authorized, an unknown problem) says nothing about reachability.
 */
export function reachabilityOfProblem(problem: XProblem): CheckedReachability | undefined {
  const title = typeof problem.title === "string" ? problem.title : "";
  const detail = typeof problem.detail === "string" ? problem.detail : "";
  if (/suspended/i.test(detail) || title === "Forbidden") return "suspended";
  if (title === "Not Found Error" || /^Could not find user/i.test(detail)) return "deactivated";
  return undefined;
}

export async function processUsersLookupResponse(response: Response, handles: readonly string[]): Promise<LookupOutcome> {
  const rateLimit = rateLimitOf(response.headers);
  if (response.status === 429) {
    await response.body?.cancel();
    return { ok: false, reason: "rate-limited", rateLimit };
  }
  if (!response.ok) {
    await response.body?.cancel();
    return { ok: false, reason: "failed", status: response.status, message: `X API answered ${response.status}` };
  }
  let body: { data?: unknown; errors?: unknown };
  try {
    body = (await response.json()) as typeof body;
  } catch {
    return { ok: false, reason: "failed", status: response.status, message: "X API answered with a body that is not JSON" };
  }
  const asked = new Set(handles.map((h) => h.toLowerCase()));
  const results = new Map<string, CheckedReachability>();
  for (const user of Array.isArray(body?.data) ? (body.data as XUser[]) : []) {
    const name = typeof user?.username === "string" ? user.username.toLowerCase() : undefined;
    if (name !== undefined && asked.has(name)) results.set(name, "live");
  }
  for (const problem of Array.isArray(body?.errors) ? (body.errors as XProblem[]) : []) {
    const value = typeof problem?.value === "string" ? problem.value : problem?.resource_id;
    const name = typeof value === "string" ? value.toLowerCase() : undefined;
    if (name === undefined || !asked.has(name) || results.has(name)) continue;
    const reachability = reachabilityOfProblem(problem);
    if (reachability) results.set(name, reachability);
  }
  const unresolved = [...asked].filter((h) => !results.has(h));
  return { ok: true, results, unresolved, rateLimit };
}

/** One call; a network failure is a failed outcome like a 5xx, never an exception. */
export async function lookupUsers(client: XUsersClient, handles: readonly string[]): Promise<LookupOutcome> {
  let response: Response;
  try {
    response = await (client.fetch ?? fetch)(usersLookupRequest(client, handles));
  } catch {
    return { ok: false, reason: "failed", status: 0, message: "X API could not be reached" };
  }
  return await processUsersLookupResponse(response, handles);
}
