// OAuth request parameters: each may appear once, except `resource`, which may repeat when
// every value names this server.
import type { OAuthDeps } from "./deps.ts";

export interface Params {
  get(name: string): string | undefined;
  resources: string[];
  /** The first parameter other than `resource` that appears more than once. */
  repeated?: string;
}

export function formParams(source: URLSearchParams): Params {
  const values = new Map<string, string>();
  const resources: string[] = [];
  let repeated: string | undefined;
  for (const [name, value] of source) {
    if (name === "resource") {
      resources.push(value);
      continue;
    }
    if (values.has(name)) repeated ??= name;
    else values.set(name, value);
  }
  return { get: (name) => values.get(name), resources, repeated };
}

/** A `resource` value that names `{site_url}/mcp` (scheme and host compared case-insensitively, as a URL parser does). */
export function namesThisServer(deps: Pick<OAuthDeps, "resource">, value: string): boolean {
  if (value === deps.resource) return true;
  try {
    const url = new URL(value);
    if (url.hash || value.includes("#")) return false;
    return url.href === new URL(deps.resource).href;
  } catch {
    return false;
  }
}
