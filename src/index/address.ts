// Wallet addresses: 0x + 40 hex characters, accepted in any case, kept lowercased.
import * as v from "valibot";

const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/;

/** The address every endpoint accepts; also its description in the OpenAPI document. */
export const Address = v.pipe(
  v.string(),
  v.regex(ADDRESS_PATTERN, "an address is 0x followed by 40 hex characters"),
  v.description("Wallet address: 0x followed by 40 hex characters, any case; returned lowercased"),
  v.examples(["0x1111111111111111111111111111111111111111"]),
);

export function isAddress(value: unknown): value is string {
  return v.is(Address, value);
}

/**
 * Lowercases and removes duplicates, keeping the first position of each; returns the first
 * `keepInvalid` malformed entries as sent and how many there are. Builds nothing per entry but
 * the addresses kept.
 */
export function normalizeAddressList(
  entries: unknown[],
  keepInvalid = 5,
): { unique: string[]; invalid: unknown[]; invalidCount: number } {
  const seen = new Set<string>();
  const unique: string[] = [];
  const invalid: unknown[] = [];
  let invalidCount = 0;
  for (const entry of entries) {
    if (typeof entry !== "string" || !ADDRESS_PATTERN.test(entry)) {
      if (invalidCount++ < keepInvalid) invalid.push(entry);
      continue;
    }
    if (invalidCount > 0) continue;
    const address = entry.toLowerCase();
    if (!seen.has(address)) {
      seen.add(address);
      unique.push(address);
    }
  }
  return { unique, invalid, invalidCount };
}
