// Hub messages and events (the hub's OpenAPI document) read into the few facts the index keeps:
// an Ethereum verification added or removed, a username set.

/** A hub Message as JSON; only the fields read here are typed. */
export interface HubMessage {
  data?: {
    type?: string;
    fid?: number;
    timestamp?: number;
    verificationAddEthAddressBody?: { address?: unknown; protocol?: unknown };
    verificationAddAddressBody?: { address?: unknown; protocol?: unknown };
    verificationRemoveBody?: { address?: unknown; protocol?: unknown };
    userDataBody?: { type?: string; value?: unknown };
  };
}

export type HubEventType =
  | "HUB_EVENT_TYPE_MERGE_MESSAGE"
  | "HUB_EVENT_TYPE_PRUNE_MESSAGE"
  | "HUB_EVENT_TYPE_REVOKE_MESSAGE"
  | "HUB_EVENT_TYPE_MERGE_USERNAME_PROOF"
  | "HUB_EVENT_TYPE_MERGE_ON_CHAIN_EVENT";

export interface HubEvent {
  id: bigint;
  type: string;
  /** The message merged, pruned or revoked (absent for the other types). */
  message?: HubMessage;
}

/** What one event does to the index. */
export type Effect =
  | { op: "add"; fid: number; address: string }
  | { op: "remove"; fid: number; address: string }
  | { op: "username"; fid: number; username: string };

const ETH_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** A raw event from /v1/events, or undefined when it has no usable id. */
export function parseHubEvent(raw: unknown): HubEvent | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const e = raw as Record<string, unknown>;
  const id = typeof e.id === "string" && /^\d+$/.test(e.id) ? BigInt(e.id) : typeof e.id === "number" ? BigInt(Math.trunc(e.id)) : undefined;
  if (id === undefined || typeof e.type !== "string") return undefined;
  const body =
    e.type === "HUB_EVENT_TYPE_MERGE_MESSAGE" ? e.mergeMessageBody
    : e.type === "HUB_EVENT_TYPE_PRUNE_MESSAGE" ? e.pruneMessageBody
    : e.type === "HUB_EVENT_TYPE_REVOKE_MESSAGE" ? e.revokeMessageBody
    : undefined;
  const message = (body as { message?: HubMessage } | undefined)?.message;
  return { id, type: e.type, message: typeof message === "object" && message !== null ? message : undefined };
}

/**
 * The Ethereum address of a verification body, lowercased: the yaml's
 * verificationAddEthAddressBody, or the newer verificationAddAddressBody with `protocol`; only
 * PROTOCOL_ETHEREUM counts, or an address of 0x and 40 hex digits where no protocol is given.
 */
function ethAddress(body: { address?: unknown; protocol?: unknown } | undefined): string | undefined {
  if (!body || typeof body.address !== "string") return undefined;
  if (body.protocol !== undefined && body.protocol !== "PROTOCOL_ETHEREUM" && body.protocol !== 0) return undefined;
  return ETH_ADDRESS.test(body.address) ? body.address.toLowerCase() : undefined;
}

/** The Ethereum address a verification-add message binds to its fid. */
export function verifiedAddress(message: HubMessage | undefined): string | undefined {
  const data = message?.data;
  if (data?.type !== "MESSAGE_TYPE_VERIFICATION_ADD_ETH_ADDRESS") return undefined;
  return ethAddress(data.verificationAddEthAddressBody ?? data.verificationAddAddressBody);
}

function fidOf(message: HubMessage | undefined): number | undefined {
  const fid = message?.data?.fid;
  return typeof fid === "number" && Number.isSafeInteger(fid) && fid > 0 ? fid : undefined;
}

/** The username a USER_DATA_ADD message sets, lowercased. */
export function usernameOf(message: HubMessage | undefined): string | undefined {
  const data = message?.data;
  if (data?.type !== "MESSAGE_TYPE_USER_DATA_ADD" || data.userDataBody?.type !== "USER_DATA_TYPE_USERNAME") return undefined;
  const value = data.userDataBody.value;
  return typeof value === "string" && value.trim() !== "" ? value.trim().toLowerCase() : undefined;
}

/**
 * The effect of one event. A merged verification add or remove, a merged username; a pruned or
 * revoked verification removes it. A revoked or pruned username leaves the last one known (the
 * index keeps an account's username until another is set), and the other event types (casts,
 * links, on-chain events, username proofs) change nothing the index keeps.
 */
export function effectOf(event: HubEvent): Effect | undefined {
  const message = event.message;
  const fid = fidOf(message);
  if (fid === undefined) return undefined;
  const type = message?.data?.type;
  if (event.type === "HUB_EVENT_TYPE_MERGE_MESSAGE") {
    if (type === "MESSAGE_TYPE_VERIFICATION_ADD_ETH_ADDRESS") {
      const address = verifiedAddress(message);
      return address ? { op: "add", fid, address } : undefined;
    }
    if (type === "MESSAGE_TYPE_VERIFICATION_REMOVE") {
      const address = ethAddress(message?.data?.verificationRemoveBody);
      return address ? { op: "remove", fid, address } : undefined;
    }
    const username = usernameOf(message);
    return username ? { op: "username", fid, username } : undefined;
  }
  if (event.type === "HUB_EVENT_TYPE_PRUNE_MESSAGE" || event.type === "HUB_EVENT_TYPE_REVOKE_MESSAGE") {
    const address = verifiedAddress(message);
    return address ? { op: "remove", fid, address } : undefined;
  }
  return undefined;
}
