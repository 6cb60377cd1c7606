// Wallet addresses: 0x + 40 hex characters, accepted in any case, kept lowercased.
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export function isAddress(value: unknown): value is string {
  return typeof value === "string" && ADDRESS.test(value);
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
