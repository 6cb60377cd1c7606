// Endpoint secrets: generated as Standard Webhooks asks (`whsec_` + base64 of 32 random bytes),
// kept encrypted with AES-GCM under the server's webhook key, so a database dump alone cannot
// sign: the key is WEBHOOK_SECRET_KEY, outside the database (or, when unset, a key generated on
// first start and kept in server_secrets, which then a dump does hold; docs/webhooks.md says so).
import type { Db } from "../db/types.ts";
import { loadSecret } from "../http/cursor.ts";

const KEY_NAME = "webhook_secret_key";

export function newEndpointSecret(): string {
  return `whsec_${toBase64(crypto.getRandomValues(new Uint8Array(32)))}`;
}

export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));
}

export interface SecretBox {
  seal(secret: string): Promise<string>;
  open(sealed: string): Promise<string>;
}

/** AES-GCM with a key derived (SHA-256) from the configured secret, or the one kept in the database. */
export function secretBox(db: Db, configured: string | undefined): SecretBox {
  let key: Promise<CryptoKey> | undefined;
  const keyOf = () =>
    (key ??= loadSecret(db, KEY_NAME, configured)
      .then((secret) => crypto.subtle.digest("SHA-256", new TextEncoder().encode(secret)))
      .then((raw) => crypto.subtle.importKey("raw", raw, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]))).catch((err) => {
      key = undefined;
      throw err;
    });
  return {
    async seal(secret) {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await keyOf(), new TextEncoder().encode(secret)));
      const out = new Uint8Array(iv.length + sealed.length);
      out.set(iv);
      out.set(sealed, iv.length);
      return toBase64(out);
    },
    async open(sealed) {
      const bytes = fromBase64(sealed);
      const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: bytes.slice(0, 12) }, await keyOf(), bytes.slice(12));
      return new TextDecoder().decode(plain);
    },
  };
}
