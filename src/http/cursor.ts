// Opaque, tamper-evident keyset cursors for reverse lookups: a position (rank, wallet) bound to
// the lookup it was issued for, signed with HMAC-SHA-256 under a server secret.
import * as v from "valibot";
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { ApiError } from "./errors.ts";
import { hmacSha256, type Mac } from "./mac.ts";

export interface CursorPosition {
  /** What the cursor pages: `twitter` or `farcaster`, and the lowercased handle or username. */
  kind: "twitter" | "farcaster";
  key: string;
  rank: number;
  wallet: string;
}

export interface CursorSigner {
  sign: (position: CursorPosition) => Promise<string>;
  /** The position of a cursor issued for this kind and key; INVALID_CURSOR for anything else. */
  open: (cursor: string, expected: { kind: CursorPosition["kind"]; key: string }) => Promise<CursorPosition>;
}

const VERSION = "c1";
const SECRET_NAME = "cursor_hmac";

const Payload = v.strictObject({
  k: v.picklist(["twitter", "farcaster"]),
  q: v.pipe(v.string(), v.maxLength(64)),
  r: v.pipe(v.number(), v.integer(), v.minValue(-2_147_483_648), v.maxValue(2_147_483_647)),
  w: v.pipe(v.string(), v.regex(/^0x[0-9a-f]{40}$/)),
});

export function toBase64Url(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

export function fromBase64Url(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  try {
    const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
    return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  } catch {
    return undefined;
  }
}

export function invalidCursor(reason: string): ApiError {
  return new ApiError(
    400,
    "INVALID_CURSOR",
    `Cannot use cursor: ${reason}; pass meta.next_cursor back unmodified, or omit cursor for the first page`,
  );
}

/**
 * The secret from config when set, else the one stored in the database under `name`, generated
 * by the first process to ask: every process on one database signs and verifies with the same key.
 */
export async function loadSecret(db: Db, name: string, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  const fresh = toBase64Url(crypto.getRandomValues(new Uint8Array(32)));
  const [row] = await db.query<{ value: string }>(sql("server_secrets_ensure"), [name, fresh]);
  return row.value;
}

/** The MAC keyed with loadSecret's secret, loaded on first use (a database hiccup then is retried on the next call). */
export function secretMac(db: Db, name: string, configured: string | undefined): () => Promise<Mac> {
  let key: Promise<Mac> | undefined;
  return () =>
    (key ??= loadSecret(db, name, configured).then(hmacSha256)).catch((err) => {
      key = undefined;
      throw err;
    });
}

export function createCursorSigner(db: Db, configuredSecret?: string): CursorSigner {
  const hmacKey = secretMac(db, SECRET_NAME, configuredSecret);

  return {
    async sign(position) {
      const body = toBase64Url(
        new TextEncoder().encode(JSON.stringify({ k: position.kind, q: position.key, r: position.rank, w: position.wallet })),
      );
      const signed = `${VERSION}.${body}`;
      return `${signed}.${toBase64Url((await hmacKey()).sign(signed))}`;
    },

    async open(cursor, expected) {
      const parts = cursor.split(".");
      if (parts.length !== 3 || parts[0] !== VERSION) throw invalidCursor("it is not a cursor this API issued");
      const body = fromBase64Url(parts[1]);
      const mac = fromBase64Url(parts[2]);
      if (!body || !mac) throw invalidCursor("it is not a cursor this API issued");
      if (!(await hmacKey()).verify(mac, `${parts[0]}.${parts[1]}`)) throw invalidCursor("signature does not match");
      let parsed: unknown;
      try {
        parsed = JSON.parse(new TextDecoder().decode(body));
      } catch {
        throw invalidCursor("it is not a cursor this API issued");
      }
      const payload = v.safeParse(Payload, parsed);
      if (!payload.success) throw invalidCursor("it is not a cursor this API issued");
      const p = payload.output;
      if (p.k !== expected.kind || p.q !== expected.key) {
        const what = expected.kind === "twitter" ? "handle" : "username";
        throw invalidCursor(`it was issued for another ${what}`);
      }
      return { kind: p.k, key: p.q, rank: p.r, wallet: p.w };
    },
  };
}
