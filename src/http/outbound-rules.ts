// The rules every request to a user-given URL keeps, whatever the runtime (docs/operating.md,
// "Outbound requests"): the URL's form, the addresses its host may resolve to, the bounded read.
import { nonPublicReason, parseIPv4 } from "./addresses.ts";
import { concatChunks } from "./body.ts";
import { OutboundError } from "./outbound.ts";

/** Resolves a host name to every address it has (IPv4 and IPv6). */
export type ResolveHost = (hostname: string) => Promise<string[]>;

/** A URL that passed the form rules. */
export interface OutboundTarget {
  url: URL;
  /** The host without IPv6 brackets, as the URL parser prints it. */
  hostname: string;
  /** The host when it is an IP address rather than a name. */
  literal?: string;
  /** Named in WEBHOOK_ALLOW_HOSTS: exempt from the address rules, and may use http. */
  allowed: boolean;
}

/** A host as a URL parser prints it (lower case, IPv4 in dotted form, IPv6 in brackets), or undefined. */
export function canonicalHost(host: string): string | undefined {
  const h = host.trim().toLowerCase();
  if (!h || /[/?#@\s]/.test(h)) return undefined;
  try {
    return new URL(`http://${h.includes(":") && !h.startsWith("[") ? `[${h}]` : h}/`).hostname;
  } catch {
    return undefined;
  }
}

/** The allow list (WEBHOOK_ALLOW_HOSTS), each host as a URL parser prints it. */
export function allowList(hosts: readonly string[]): Set<string> {
  return new Set(hosts.map(canonicalHost).filter((h): h is string => h !== undefined));
}

/** The host of an absolute URL exactly as written, before the parser rewrote it. */
function writtenHost(text: string): string | undefined {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#\\]*)/i.exec(text.trim());
  if (!m) return undefined;
  const authority = m[1].slice(m[1].lastIndexOf("@") + 1);
  if (authority.startsWith("[")) return authority.slice(0, authority.indexOf("]") + 1);
  const colon = authority.lastIndexOf(":");
  return colon === -1 ? authority : authority.slice(0, colon);
}

const refuse = (message: string) => new OutboundError("url", message);

/**
 * Checks a URL's form: https (http only for an allowed host), no credentials, and a host that is
 * a name, or a public IP address written the one way a URL parser prints it (never the decimal,
 * octal, hex or short forms that parsers turn into an address). Throws `OutboundError("url")`.
 */
export function parseTarget(text: string, allow: Set<string>): OutboundTarget {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refuse("the URL is not a valid absolute URL");
  }
  const allowed = allow.has(url.hostname);
  if (url.protocol !== "https:" && !(allowed && url.protocol === "http:")) throw refuse("the URL must use https");
  if (url.username || url.password) throw refuse("the URL must not carry credentials");
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const literal = parseIPv4(hostname) || url.hostname.startsWith("[") ? hostname : undefined;
  if (literal && !allowed) {
    const written = writtenHost(text)?.toLowerCase();
    if (written !== url.hostname) throw refuse(`the URL's host ${written ?? ""} is the IP address ${literal} written in another form`);
    const reason = nonPublicReason(literal);
    if (reason) throw refuse(`the URL's host ${literal} is ${reason}, not a public address`);
  }
  return { url, hostname, literal, allowed };
}

/** Refuses an answer with no address, or with any address that is not public unicast. */
export function checkAddresses(hostname: string, addresses: readonly string[]): void {
  if (addresses.length === 0) throw new OutboundError("address", `${hostname} has no addresses`);
  for (const address of addresses) {
    const reason = nonPublicReason(address);
    if (reason) throw new OutboundError("address", `${hostname} resolves to ${address} (${reason}), not a public address`);
  }
}

/** Every address of a name; a lookup that fails or takes longer than `timeoutMs` is a `network` failure. */
export async function resolveAll(resolve: ResolveHost, hostname: string, timeoutMs: number): Promise<string[]> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      resolve(hostname),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new OutboundError("timeout", `${hostname} did not resolve within ${timeoutMs} ms`)), timeoutMs);
        (timer as { unref?: () => void }).unref?.();
      }),
    ]);
  } catch (err) {
    if (err instanceof OutboundError) throw err;
    throw new OutboundError("network", `${hostname} could not be resolved`);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The addresses a target may be connected to: its literal address, or every address its name
 * resolves to, all of them checked (an allowed host's unchecked).
 */
export async function allowedAddresses(target: OutboundTarget, resolve: ResolveHost, timeoutMs: number): Promise<string[]> {
  if (target.literal) return [target.literal];
  const addresses = await resolveAll(resolve, target.hostname, timeoutMs);
  if (!target.allowed) checkAddresses(target.hostname, addresses);
  else if (addresses.length === 0) throw new OutboundError("address", `${target.hostname} has no addresses`);
  return addresses;
}

/**
 * Reads a body stream (a Node stream, as undici's request answers) to its end, counting the bytes
 * as they arrive; past `maxBytes` it stops reading (leaving the loop destroys the stream, which
 * cuts the request) and throws `too_large`. A Web Response is read with readAtMost (./body.ts).
 */
export async function readBounded(chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge(maxBytes);
    parts.push(chunk);
  }
  return concatChunks(parts, size);
}

export const tooLarge = (maxBytes: number) => new OutboundError("too_large", `the response is larger than ${maxBytes} bytes`);

/**
 * Runs one exchange under its time bound: `work` gets a signal that aborts at `timeoutMs`, and the
 * call ends then whatever `work` is waiting for (a connection still resolving included). Every
 * failure comes out as an `OutboundError`.
 */
export async function withinTime<T>(timeoutMs: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const signal = AbortSignal.timeout(timeoutMs);
  const timedOut = () => new OutboundError("timeout", `no complete answer within ${timeoutMs} ms`);
  let onAbort = () => {};
  const deadline = new Promise<never>((_, reject) => {
    onAbort = () => reject(timedOut());
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([work(signal), deadline]);
  } catch (err) {
    if (err instanceof OutboundError) throw err;
    const cause = (err as { cause?: unknown } | null)?.cause;
    if (cause instanceof OutboundError) throw cause;
    if (signal.aborted) throw timedOut();
    const code = (err as { code?: unknown } | null)?.code;
    throw new OutboundError("network", `the request failed${typeof code === "string" ? ` (${code})` : ""}`);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
