// A fake Farcaster hub: a real HTTP server on 127.0.0.1 answering the hub HTTP API as the hub's
// OpenAPI document describes it (/v1/info with numShards, /v1/fids by shard, verifications,
// user data, follow links, /v1/events with uint64 ids), with page sizes, 429 and 500 answers,
// slow paths and events appended while a client reads. Used by the tests and the bench.
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const FARCASTER_EPOCH_MS = Date.UTC(2021, 0, 1);

export interface FakeHubBehaviour {
  /** The next n requests answer 429 with Retry-After: retryAfter (seconds, default "0"). */
  rateLimit?: number;
  retryAfter?: string;
  /** The next n requests answer 500. */
  fail?: number;
  /** Requests this picks (path and query) wait `delayMs` first. */
  slow?: (path: string, query: URLSearchParams) => boolean;
  delayMs?: number;
}

interface Message {
  data: Record<string, unknown>;
  hash: string;
  hashScheme: "HASH_SCHEME_BLAKE3";
  signature: string;
  signatureScheme: "SIGNATURE_SCHEME_ED25519";
  signer: string;
}

interface FidState {
  verifications: Map<string, Message>;
  username?: Message;
  followers: number;
}

export interface FakeHub {
  url: string;
  /** Requests received, by path. */
  requests: Map<string, number>;
  /** Called on every request before it is answered (a test appends events mid-backfill here). */
  onRequest?: (path: string, query: URLSearchParams) => void;
  behave(b: FakeHubBehaviour): void;
  /** Adds an fid (no event: it existed before anyone listened). */
  seed(fid: number, options: { username?: string; addresses?: string[]; followers?: number }): void;
  addVerification(fid: number, address: string, options?: { newBody?: boolean }): bigint;
  removeVerification(fid: number, address: string): bigint;
  setUsername(fid: number, username: string): bigint;
  /** A verification revoked with its signer (HUB_EVENT_TYPE_REVOKE_MESSAGE) or pruned (..._PRUNE_MESSAGE). */
  dropVerification(fid: number, address: string, how: "revoke" | "prune"): bigint;
  /** An event the index ignores (a cast), to fill pages. */
  addCast(fid: number): bigint;
  /** The newest event id (0n before any). */
  readonly headEventId: bigint;
  readonly eventCount: number;
  /** What the hub says now: every (fid, address) verified, and each fid's username. */
  truth(): { verifications: Array<{ fid: number; address: string }>; usernames: Map<number, string> };
  close(): Promise<void>;
}

export interface FakeHubOptions {
  numShards?: number;
  /** Largest page /v1/fids answers (a smaller pageSize asked wins). */
  fidsPageSize?: number;
  eventsPageSize?: number;
  /** The first event's id: above 2^32 by default, as real hubs' are, and above 2^53 when asked. */
  firstEventId?: bigint;
}

function hex(n: number, bytes: number, seed: number): string {
  let out = "";
  let x = (n * 2654435761 + seed * 40503) >>> 0;
  while (out.length < bytes * 2) {
    x = (x * 1103515245 + 12345) >>> 0;
    out += x.toString(16).padStart(8, "0");
  }
  return `0x${out.slice(0, bytes * 2)}`;
}

function base64(n: number, bytes: number): string {
  return Buffer.from(hex(n, bytes, 7).slice(2), "hex").toString("base64");
}

let counter = 0;

function message(fid: number, type: string, body: Record<string, unknown>): Message {
  counter++;
  return {
    data: { type, fid, timestamp: Math.floor((Date.now() - FARCASTER_EPOCH_MS) / 1000), network: "FARCASTER_NETWORK_MAINNET", ...body },
    hash: hex(counter, 20, 1),
    hashScheme: "HASH_SCHEME_BLAKE3",
    signature: base64(counter, 64),
    signatureScheme: "SIGNATURE_SCHEME_ED25519",
    signer: hex(fid, 32, 2),
  };
}

function verificationMessage(fid: number, address: string, newBody = false): Message {
  return newBody
    ? message(fid, "MESSAGE_TYPE_VERIFICATION_ADD_ETH_ADDRESS", {
        verificationAddAddressBody: { address, claimSignature: base64(fid, 65), blockHash: hex(fid, 32, 3), protocol: "PROTOCOL_ETHEREUM" },
      })
    : message(fid, "MESSAGE_TYPE_VERIFICATION_ADD_ETH_ADDRESS", {
        verificationAddEthAddressBody: { address, ethSignature: base64(fid, 65), blockHash: hex(fid, 32, 3) },
      });
}

function usernameMessage(fid: number, username: string): Message {
  return message(fid, "MESSAGE_TYPE_USER_DATA_ADD", { userDataBody: { type: "USER_DATA_TYPE_USERNAME", value: username } });
}

/** Page tokens are base64 (format: byte), as the hub's are; here they carry an offset. */
function tokenAt(offset: number): string {
  return Buffer.from(`o:${offset}`).toString("base64");
}

function offsetOf(token: string | null): number {
  if (!token) return 0;
  const m = /^o:(\d+)$/.exec(Buffer.from(token, "base64").toString());
  return m ? Number(m[1]) : 0;
}

/** JSON with bigint written as a bare number (uint64 event ids, as the hub writes them). */
function stringify(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `\u0000${v}\u0000` : v)).replace(/"\\u0000(\d+)\\u0000"/g, "$1");
}

function errorBody(errCode: string, details: string, code: number) {
  return { errCode, presentable: false, name: errCode, code, details, metadata: { errcode: [errCode] } };
}

export async function startFakeHub(options: FakeHubOptions = {}): Promise<FakeHub> {
  const numShards = options.numShards ?? 2;
  const fidsPageSize = options.fidsPageSize ?? 1000;
  const eventsPageSize = options.eventsPageSize ?? 1000;
  const fids = new Map<number, FidState>();
  const events: Array<{ id: bigint; body: Record<string, unknown> }> = [];
  let nextId = options.firstEventId ?? 5_000_000_000n;
  let behaviour: FakeHubBehaviour = {};
  let sortedShards: Map<number, number[]> | undefined;

  const shardOf = (fid: number) => (fid % numShards) + 1;
  const state = (fid: number) => {
    let s = fids.get(fid);
    if (!s) {
      s = { verifications: new Map(), followers: 0 };
      fids.set(fid, s);
      sortedShards = undefined;
    }
    return s;
  };
  const append = (type: string, bodyName: string, body: Record<string, unknown>): bigint => {
    const id = nextId;
    nextId += BigInt(1 + (events.length % 3)); // ids are increasing, not contiguous
    events.push({ id, body: { type, id, [bodyName]: body } });
    return id;
  };

  const requests = new Map<string, number>();
  const pending = new Set<ReturnType<typeof setTimeout>>();
  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(typeof body === "string" ? body : stringify(body));
  };

  function answer(path: string, q: URLSearchParams, res: ServerResponse): void {
    switch (path) {
      case "/v1/info":
        return send(res, 200, {
          version: "0.3.1",
          isSyncing: false,
          nickname: "fake-hub",
          rootHash: "",
          peerId: "12D3KooWfake",
          hubOperatorFid: 1,
          numShards,
          shardInfos: Array.from({ length: numShards + 1 }, (_, i) => ({ shardId: i, maxHeight: 1000, numMessages: 0, numFidEvents: 0, numFnameEvents: 0, approxSize: 0, blockDelay: 0, mempoolSize: 0 })),
        });
      case "/v1/fids": {
        const shard = Number(q.get("shard_id"));
        if (!q.has("shard_id") || !Number.isInteger(shard)) return send(res, 400, errorBody("bad_request.validation_failure", "shard_id is required", 3));
        if (!sortedShards) {
          sortedShards = new Map();
          for (const fid of [...fids.keys()].sort((a, b) => a - b)) {
            const s = shardOf(fid);
            if (!sortedShards.has(s)) sortedShards.set(s, []);
            sortedShards.get(s)!.push(fid);
          }
        }
        const all = sortedShards.get(shard) ?? [];
        const size = Math.min(fidsPageSize, Number(q.get("pageSize") || fidsPageSize));
        const offset = offsetOf(q.get("pageToken"));
        const page = all.slice(offset, offset + size);
        return send(res, 200, { fids: page, nextPageToken: offset + size < all.length ? tokenAt(offset + size) : "" });
      }
      case "/v1/verificationsByFid": {
        const s = fids.get(Number(q.get("fid")));
        const messages = s ? [...s.verifications.values()] : [];
        const size = Number(q.get("pageSize") || 100);
        const offset = offsetOf(q.get("pageToken"));
        return send(res, 200, { messages: messages.slice(offset, offset + size), nextPageToken: offset + size < messages.length ? tokenAt(offset + size) : "" });
      }
      case "/v1/userDataByFid": {
        const s = fids.get(Number(q.get("fid")));
        const type = q.get("user_data_type");
        if (type) {
          if (type !== "USER_DATA_TYPE_USERNAME" && type !== "6") return send(res, 400, errorBody("not_found", "no such user data", 3));
          if (!s?.username) return send(res, 400, errorBody("not_found", "no such user data", 3));
          return send(res, 200, s.username);
        }
        return send(res, 200, { messages: s?.username ? [s.username] : [], nextPageToken: "" });
      }
      case "/v1/linksByTargetFid": {
        const fid = Number(q.get("target_fid"));
        const total = fids.get(fid)?.followers ?? 0;
        const size = Number(q.get("pageSize") || 100);
        const offset = offsetOf(q.get("pageToken"));
        const count = Math.max(0, Math.min(size, total - offset));
        const messages = Array.from({ length: count }, (_, i) => message(1_000_000 + offset + i, "MESSAGE_TYPE_LINK_ADD", { linkBody: { type: "follow", targetFid: fid } }));
        return send(res, 200, { messages, nextPageToken: offset + size < total ? tokenAt(offset + size) : "" });
      }
      case "/v1/events": {
        const from = BigInt(q.get("from_event_id") || "0");
        // binary search for the first event at or after `from`
        let lo = 0;
        let hi = events.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (events[mid].id < from) lo = mid + 1;
          else hi = mid;
        }
        const page = events.slice(lo, lo + eventsPageSize);
        const nextPageEventId = page.length > 0 ? page[page.length - 1].id + 1n : from;
        return send(res, 200, `{"events":[${page.map((e) => stringify(e.body)).join(",")}],"nextPageEventId":${nextPageEventId}}`);
      }
      default:
        return send(res, 404, errorBody("not_found", `no route ${path}`, 5));
    }
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://hub");
    requests.set(url.pathname, (requests.get(url.pathname) ?? 0) + 1);
    hub.onRequest?.(url.pathname, url.searchParams);
    const go = () => {
      if ((behaviour.rateLimit ?? 0) > 0) {
        behaviour.rateLimit!--;
        return send(res, 429, errorBody("unavailable.rate_limited", "too many requests", 8), { "retry-after": behaviour.retryAfter ?? "0" });
      }
      if ((behaviour.fail ?? 0) > 0) {
        behaviour.fail!--;
        return send(res, 500, errorBody("unknown", "internal error", 2));
      }
      answer(url.pathname, url.searchParams, res);
    };
    if (behaviour.slow?.(url.pathname, url.searchParams)) {
      const timer = setTimeout(() => (pending.delete(timer), go()), behaviour.delayMs ?? 1000);
      pending.add(timer);
    } else go();
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));

  const hub: FakeHub = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    behave(b) {
      behaviour = { ...b };
    },
    seed(fid, o) {
      const s = state(fid);
      if (o.username) s.username = usernameMessage(fid, o.username);
      for (const a of o.addresses ?? []) s.verifications.set(a.toLowerCase(), verificationMessage(fid, a));
      s.followers = o.followers ?? 0;
    },
    addVerification(fid, address, o = {}) {
      const m = verificationMessage(fid, address, o.newBody);
      state(fid).verifications.set(address.toLowerCase(), m);
      return append("HUB_EVENT_TYPE_MERGE_MESSAGE", "mergeMessageBody", { message: m, deletedMessages: [] });
    },
    removeVerification(fid, address) {
      const s = state(fid);
      const old = s.verifications.get(address.toLowerCase());
      s.verifications.delete(address.toLowerCase());
      const m = message(fid, "MESSAGE_TYPE_VERIFICATION_REMOVE", { verificationRemoveBody: { address } });
      return append("HUB_EVENT_TYPE_MERGE_MESSAGE", "mergeMessageBody", { message: m, deletedMessages: old ? [old] : [] });
    },
    setUsername(fid, username) {
      const s = state(fid);
      const old = s.username;
      s.username = usernameMessage(fid, username);
      return append("HUB_EVENT_TYPE_MERGE_MESSAGE", "mergeMessageBody", { message: s.username, deletedMessages: old ? [old] : [] });
    },
    dropVerification(fid, address, how) {
      const s = state(fid);
      const m = s.verifications.get(address.toLowerCase()) ?? verificationMessage(fid, address);
      s.verifications.delete(address.toLowerCase());
      return how === "revoke"
        ? append("HUB_EVENT_TYPE_REVOKE_MESSAGE", "revokeMessageBody", { message: m })
        : append("HUB_EVENT_TYPE_PRUNE_MESSAGE", "pruneMessageBody", { message: m });
    },
    addCast(fid) {
      const m = message(fid, "MESSAGE_TYPE_CAST_ADD", { castAddBody: { text: "gm", embeds: [], mentions: [], mentionsPositions: [] } });
      return append("HUB_EVENT_TYPE_MERGE_MESSAGE", "mergeMessageBody", { message: m, deletedMessages: [] });
    },
    get headEventId() {
      return events.at(-1)?.id ?? 0n;
    },
    get eventCount() {
      return events.length;
    },
    truth() {
      const verifications: Array<{ fid: number; address: string }> = [];
      const usernames = new Map<number, string>();
      for (const [fid, s] of fids) {
        for (const address of s.verifications.keys()) verifications.push({ fid, address });
        const name = s.username?.data.userDataBody as { value?: string } | undefined;
        if (name?.value) usernames.set(fid, name.value);
      }
      return { verifications, usernames };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of pending) clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return hub;
}
