// Random tokens of the OAuth flow and the checks on them, on Web Crypto only: access tokens
// `wid_mcp_…`, refresh tokens `wid_mcr_…`, authorization codes, client ids and CSRF tokens.
import { sha256Hex } from "../ledger/keys.ts";

export const ACCESS_PREFIX = "wid_mcp_";
export const REFRESH_PREFIX = "wid_mcr_";

export function base64Url(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** 32 random bytes as 43 URL-safe characters, after `prefix`. */
export function randomToken(prefix = ""): string {
  return prefix + base64Url(crypto.getRandomValues(new Uint8Array(32)));
}

export function isAccessTokenShape(value: string): boolean {
  return /^wid_mcp_[A-Za-z0-9_-]{43,128}$/.test(value);
}

export function isRefreshTokenShape(value: string): boolean {
  return /^wid_mcr_[A-Za-z0-9_-]{43,128}$/.test(value);
}

/** Secrets are stored and looked up by SHA-256 only. */
export const tokenHash = sha256Hex;

/** Equal strings, compared in time that does not depend on where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/** RFC 7636 S256: BASE64URL(SHA-256(verifier)). */
export async function pkceChallenge(verifier: string): Promise<string> {
  return base64Url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
}

export function isCodeVerifierShape(value: string): boolean {
  return /^[A-Za-z0-9._~-]{43,128}$/.test(value);
}

/** A S256 challenge is the base64url of 32 bytes: 43 characters. */
export function isCodeChallengeShape(value: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(value);
}
