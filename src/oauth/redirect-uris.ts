// The redirect URI rules of OAuth clients, registered or by metadata document: https, or http on
// loopback; no fragment, no credentials. Apart so that both client kinds check them alike.
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

export function isLoopbackRedirect(url: URL): boolean {
  return url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname);
}

/** Why a redirect URI cannot be registered, or undefined: https, or http on loopback; no fragment. */
export function redirectUriProblem(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length === 0 || value.length > 2000) return "must be a URL of at most 2000 characters";
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "is not a URL";
  }
  if (value.includes("#")) return "must not have a fragment";
  if (url.username || url.password) return "must not carry credentials";
  if (url.protocol === "https:") return undefined;
  if (isLoopbackRedirect(url)) return undefined;
  return "must use https, or http on localhost, 127.0.0.1 or [::1]";
}
