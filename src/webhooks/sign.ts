// Standard Webhooks v1 signatures with Web Crypto: HMAC-SHA256 over `id.timestamp.body`, keyed
// with the secret's decoded bytes, base64, prefixed `v1,`; several secrets sign space-separated.
import { fromBase64, toBase64 } from "./secrets.ts";

const keys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    const raw = fromBase64(secret.startsWith("whsec_") ? secret.slice(6) : secret);
    key = crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    // a handful of endpoints' secrets: kept while the process runs, dropped when it grows past them
    if (keys.size > 1000) keys.clear();
    keys.set(secret, key);
  }
  return key;
}

/** The `webhook-signature` header value for one attempt. */
export async function signature(secrets: string[], id: string, timestamp: number, body: string): Promise<string> {
  const content = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  const parts = await Promise.all(
    secrets.map(async (secret) => `v1,${toBase64(new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(secret), content)))}`),
  );
  return parts.join(" ");
}
