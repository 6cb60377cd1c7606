// Reads a request body up to a byte limit, counting bytes actually read (never Content-Length).
import * as v from "valibot";
import { normalizeAddressList } from "../index/address.ts";
import { ApiError } from "./errors.ts";
import { WalletListBody } from "./schemas.ts";

export const ONE_MB = 1024 * 1024;

export function tooLarge(limitLabel: string): ApiError {
  // the unread rest of the body is abandoned and the socket with it: tell the client not to reuse it
  return new ApiError(413, "INVALID_REQUEST", `Request body is too large: the limit is ${limitLabel}`, {
    Connection: "close",
  });
}

export async function readBodyLimited(req: Request, maxBytes: number, limitLabel: string): Promise<Uint8Array> {
  if (!req.body) return new Uint8Array(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limitLabel);
    }
    chunks.push(value);
  }
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

/**
 * Parses `{wallets: [...]}` against WalletListBody; INVALID_REQUEST when the body is not JSON or
 * wallets is missing, not an array or empty. Malformed entries pass through: INVALID_ADDRESS is
 * decided after authentication, so that 400 carries the rate-limit headers.
 */
export function parseWalletList(body: Uint8Array): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new ApiError(400, "INVALID_REQUEST", "Request body is not valid JSON");
  }
  const result = v.safeParse(WalletListBody, parsed);
  if (result.success) return result.output.wallets;
  const shapeIssue = result.issues.find((issue) => (issue.path?.length ?? 0) < 2);
  if (!shapeIssue) return (parsed as { wallets: unknown[] }).wallets;
  if (!shapeIssue.path) throw new ApiError(400, "INVALID_REQUEST", "Request body must be a JSON object with a wallets array");
  if (shapeIssue.input === undefined) throw new ApiError(400, "INVALID_REQUEST", "Request body must be a JSON object with a wallets array");
  if (shapeIssue.type === "array") throw new ApiError(400, "INVALID_REQUEST", "wallets must be an array of addresses");
  throw new ApiError(400, "INVALID_REQUEST", "wallets must not be empty");
}

/**
 * A `{wallets}` body read up to `maxBytes`: the entries as sent (the rate weight counts them),
 * the distinct lowercased addresses in order, and the entries that are not addresses.
 */
export async function readWalletList(
  req: Request,
  limit: { maxBytes: number; label: string },
): Promise<{ body: Uint8Array; entries: unknown[]; unique: string[]; invalid: unknown[] }> {
  const body = await readBodyLimited(req, limit.maxBytes, limit.label);
  const entries = parseWalletList(body);
  return { body, entries, ...normalizeAddressList(entries) };
}
