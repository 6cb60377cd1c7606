// Reads a body up to a byte limit, counting bytes actually read (never Content-Length), and parses
// the {wallets} lists that lookups, estimates and jobs take.
import { normalizeAddressList } from "../index/address.ts";
import { ApiError } from "./errors.ts";

export const ONE_MB = 1024 * 1024;

/** Refuses a request body over its limit (413): `(await readAtMost(req, max)) ?? tooLarge("1 MiB")`. */
export function tooLarge(limitLabel: string): never {
  // the unread rest of the body is abandoned and the socket with it: tell the client not to reuse it
  throw new ApiError(413, "INVALID_REQUEST", `Request body is too large: the limit is ${limitLabel}`, {
    Connection: "close",
  });
}

/**
 * A cheaper way to a request's body that an entry point may have (src/node-body.ts on Node): the
 * bytes, or null once more than `maxBytes` arrived; undefined for a request it cannot read, which
 * is then read from `req.body`.
 */
export type BodySource = (req: Request, maxBytes: number) => Promise<Uint8Array | null> | undefined;

let bodySource: BodySource | undefined;

/** Installs (or, with undefined, removes) the entry point's body source, for every app in the process. */
export function useBodySource(source: BodySource | undefined): void {
  bodySource = source;
}

/**
 * The one place a body is read up to a limit, a request's (through the entry point's body source
 * when it has one) or a fetched response's: its bytes, counted as they arrive (never
 * Content-Length), or null once more than `maxBytes` arrived (the stream is then cancelled).
 */
export async function readAtMost(message: Request | Response, maxBytes: number): Promise<Uint8Array | null> {
  const viaSource = message instanceof Response ? undefined : bodySource?.(message, maxBytes);
  if (viaSource) return await viaSource;
  if (!message.body) return new Uint8Array(0);
  const reader = message.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return concatChunks(chunks, total);
}

/** `chunks` (of `total` bytes together) as one array; the chunk itself when there is one. */
export function concatChunks(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

/** Bytes of the shortest address entry in a list: `"0x` + 40 hex + `"` and the comma after it. */
const ADDRESS_ENTRY_BYTES = 45;
/** Containers nested deeper than this are refused: a wallet list is two levels deep. */
export const MAX_JSON_DEPTH = 32;

/**
 * The most addresses a `{"wallets":[...]}` body of `maxBytes` can carry: no plan can accept a
 * longer list, so a longer one is refused before any per-entry work.
 */
export function maxListEntries(maxBytes: number): number {
  return Math.floor((maxBytes - '{"wallets":[]}'.length + 1) / ADDRESS_ENTRY_BYTES);
}

/**
 * One pass over the raw bytes before JSON.parse: refuses nesting beyond MAX_JSON_DEPTH and
 * bodies holding more values than `maxValues` (commas and containers, outside strings). The
 * parse of what passes is then linear in a bounded number of values: JSON.parse of 4.5 MiB of
 * `{},` or of `[[[...]]]` alone would hold the event loop for most of a second.
 */
export function checkJsonShape(body: Uint8Array, maxValues: number): void {
  let depth = 0;
  let values = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (inString) {
      if (byte === 0x5c /* \ */) i++;
      else if (byte === 0x22 /* " */) inString = false;
      continue;
    }
    if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x2c /* , */) {
      values++;
    } else if (byte === 0x5b /* [ */ || byte === 0x7b /* { */) {
      values++;
      if (++depth > MAX_JSON_DEPTH) {
        throw new ApiError(400, "INVALID_REQUEST", `Request body is nested too deeply: at most ${MAX_JSON_DEPTH} levels`);
      }
    } else if (byte === 0x5d /* ] */ || byte === 0x7d /* } */) {
      depth--;
    }
    if (values > maxValues) {
      throw new ApiError(
        400,
        "INVALID_REQUEST",
        `Request body holds more than ${maxValues} values: no request can carry more addresses than that`,
      );
    }
  }
}

const NOT_A_LIST = "Request body must be a JSON object with a wallets array";

/**
 * The canonical text of a JSON value: object keys sorted, no whitespace. Two bodies that are the
 * same JSON written differently have the same canonical text (an Idempotency-Key compares it).
 * Recursive: only for values checkJsonShape let through, at most MAX_JSON_DEPTH deep.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * Parses `{wallets: [...]}`; INVALID_REQUEST when the body is not JSON, too deep or too long, or
 * wallets is missing, not an array or empty. Entries are not looked at here: INVALID_ADDRESS is
 * decided after authentication, so that 400 carries the rate-limit headers. (WalletListBody
 * documents the shape; it is not used to check it because a valibot pass builds an issue object
 * for every bad entry, millions of them for a body of numbers.)
 */
export function parseWalletList(body: Uint8Array, maxEntries: number): { document: object; wallets: unknown[] } {
  // a few values beyond the list's own for other keys, which are ignored
  checkJsonShape(body, maxEntries + 64);
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new ApiError(400, "INVALID_REQUEST", "Request body is not valid JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed) || !("wallets" in parsed)) {
    throw new ApiError(400, "INVALID_REQUEST", NOT_A_LIST);
  }
  const wallets = (parsed as { wallets: unknown }).wallets;
  if (!Array.isArray(wallets)) throw new ApiError(400, "INVALID_REQUEST", "wallets must be an array of addresses");
  if (wallets.length === 0) throw new ApiError(400, "INVALID_REQUEST", "wallets must not be empty");
  if (wallets.length > maxEntries) {
    throw new ApiError(400, "INVALID_REQUEST", `wallets holds ${wallets.length} entries: no request can carry more than ${maxEntries} addresses`);
  }
  return { document: parsed, wallets };
}

/**
 * A `{wallets}` body read up to `maxBytes`: the entries as sent (the rate weight counts them),
 * the distinct lowercased addresses in order, the first few entries that are not addresses
 * with their count, and the parsed document.
 */
export async function readWalletList(
  req: Request,
  limit: { maxBytes: number; label: string },
): Promise<{ document: object; entries: unknown[]; unique: string[]; invalid: unknown[]; invalidCount: number }> {
  const body = (await readAtMost(req, limit.maxBytes)) ?? tooLarge(limit.label);
  const { document, wallets } = parseWalletList(body, maxListEntries(limit.maxBytes));
  return { document, entries: wallets, ...normalizeAddressList(wallets) };
}
