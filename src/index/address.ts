// Wallet addresses: 0x + 40 hex characters, accepted in any case, kept lowercased.
import * as v from "valibot";

/** The address every endpoint accepts; also its description in the OpenAPI document. */
export const Address = v.pipe(
  v.string(),
  v.regex(/^0x[0-9a-fA-F]{40}$/, "an address is 0x followed by 40 hex characters"),
  v.description("Wallet address: 0x followed by 40 hex characters, any case; returned lowercased"),
  v.examples(["0x1111111111111111111111111111111111111111"]),
);

export function isAddress(value: unknown): value is string {
  return v.is(Address, value);
}

/** Lowercases and removes duplicates, keeping the first position of each; returns the malformed entries too. */
export function normalizeAddressList(entries: unknown[]): { unique: string[]; invalid: unknown[] } {
  const seen = new Set<string>();
  const unique: string[] = [];
  const invalid: unknown[] = [];
  for (const entry of entries) {
    if (!isAddress(entry)) {
      invalid.push(entry);
      continue;
    }
    const address = entry.toLowerCase();
    if (!seen.has(address)) {
      seen.add(address);
      unique.push(address);
    }
  }
  return { unique, invalid };
}
