// A local fake of the X API v2 users lookup (GET /2/users/by?usernames=...) as a real HTTP
// server on 127.0.0.1: live users in `data`; suspended and unknown names as `errors` entries
// exactly as X words them; x-rate-limit-* headers; scripted 429s and failures.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export const FAKE_X_TOKEN = "test-bearer-token";

type Scripted =
  | { kind: "ok" }
  | { kind: "rate-limited"; resetAt?: Date }
  | { kind: "status"; status: number }
  | { kind: "hold"; release: Promise<void>; arrived?: () => void };

export interface FakeX {
  url: string;
  /** usernames of each call, in order (as sent) */
  calls: string[][];
  /** display-cased usernames of live accounts */
  live(...usernames: string[]): void;
  suspend(...usernames: string[]): void;
  /** a name nobody holds: the default for anything not live or suspended */
  remove(...usernames: string[]): void;
  /** answer the name with a problem that says nothing about reachability */
  unauthorized(...usernames: string[]): void;
  /** the next calls get these answers, in order, before normal service resumes */
  script(...answers: Scripted[]): void;
  /** calls left in the window on normal answers (x-rate-limit-remaining), and its reset */
  window(remaining: number, resetAt: Date): void;
  /** back to a fresh fake: no users, no script, no calls, a full window */
  clear(): void;
  close(): Promise<void>;
}

export async function startFakeX(): Promise<FakeX> {
  const live = new Map<string, string>();
  const suspended = new Set<string>();
  const unauthorized = new Set<string>();
  const scripted: Scripted[] = [];
  const calls: string[][] = [];
  let remaining = 900;
  let resetAt = new Date("2030-01-01T00:00:00Z");

  function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
    res.end(JSON.stringify(body));
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (req.method !== "GET" || url.pathname !== "/2/users/by") {
      return send(res, 404, { title: "Not Found", type: "about:blank", status: 404, detail: "Not Found" });
    }
    if (req.headers.authorization !== `Bearer ${FAKE_X_TOKEN}`) {
      return send(res, 401, { title: "Unauthorized", type: "about:blank", status: 401, detail: "Unauthorized" });
    }
    const names = (url.searchParams.get("usernames") ?? "").split(",").filter((n) => n !== "");
    calls.push(names);
    const next = scripted.shift();
    if (next?.kind === "hold") {
      next.arrived?.();
      await next.release;
    }
    if (next?.kind === "rate-limited") {
      const headers: Record<string, string> = { "x-rate-limit-limit": "900", "x-rate-limit-remaining": "0" };
      if (next.resetAt) headers["x-rate-limit-reset"] = String(Math.floor(next.resetAt.getTime() / 1000));
      return send(res, 429, { title: "Too Many Requests", detail: "Too Many Requests", type: "about:blank", status: 429 }, headers);
    }
    if (next?.kind === "status") {
      return send(res, next.status, { title: "Service Unavailable", detail: "Service Unavailable", type: "about:blank", status: next.status });
    }
    if (names.length === 0 || names.length > 100 || names.some((n) => !/^[A-Za-z0-9_]{1,15}$/.test(n))) {
      return send(res, 400, {
        errors: [{ parameters: { usernames: [names.join(",")] }, message: "The `usernames` query parameter value is not valid" }],
        title: "Invalid Request",
        detail: "One or more parameters to your request was invalid.",
        type: "https://api.twitter.com/2/problems/invalid-request",
      });
    }
    const data: object[] = [];
    const errors: object[] = [];
    for (const name of names) {
      const key = name.toLowerCase();
      const shown = live.get(key);
      if (shown) data.push({ id: String(1_000_000 + data.length), name: shown, username: shown });
      else if (suspended.has(key)) {
        errors.push({
          value: name,
          detail: `User has been suspended: [${name}].`,
          title: "Forbidden",
          resource_type: "user",
          parameter: "usernames",
          resource_id: name,
          type: "https://api.twitter.com/2/problems/resource-not-found",
        });
      } else if (unauthorized.has(key)) {
        errors.push({
          value: name,
          detail: `Sorry, you are not authorized to see the user with username: [${name}].`,
          title: "Authorization Error",
          resource_type: "user",
          parameter: "usernames",
          resource_id: name,
          type: "https://api.twitter.com/2/problems/not-authorized-for-resource",
        });
      } else {
        errors.push({
          value: name,
          detail: `Could not find user with usernames: [${name}].`,
          title: "Not Found Error",
          resource_type: "user",
          parameter: "usernames",
          resource_id: name,
          type: "https://api.twitter.com/2/problems/resource-not-found",
        });
      }
    }
    remaining = Math.max(0, remaining - 1);
    send(res, 200, { ...(data.length > 0 ? { data } : {}), ...(errors.length > 0 ? { errors } : {}) }, {
      "x-rate-limit-limit": "900",
      "x-rate-limit-remaining": String(remaining),
      "x-rate-limit-reset": String(Math.floor(resetAt.getTime() / 1000)),
    });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => send(res, 500, { title: "Internal Error" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const forget = (name: string) => {
    const key = name.toLowerCase();
    live.delete(key);
    suspended.delete(key);
    unauthorized.delete(key);
    return key;
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    live: (...names) => names.forEach((n) => live.set(forget(n), n)),
    suspend: (...names) => names.forEach((n) => suspended.add(forget(n))),
    remove: (...names) => names.forEach(forget),
    unauthorized: (...names) => names.forEach((n) => unauthorized.add(forget(n))),
    script: (...answers) => scripted.push(...answers),
    window: (left, reset) => {
      remaining = left + 1;
      resetAt = reset;
    },
    clear: () => {
      live.clear();
      suspended.clear();
      unauthorized.clear();
      scripted.length = 0;
      calls.length = 0;
      remaining = 900;
      resetAt = new Date("2030-01-01T00:00:00Z");
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
