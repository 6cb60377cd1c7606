// Outbound requests on Node.js (src/http/outbound.ts): an undici Agent whose connector resolves the
// name, refuses the connection unless every address is allowed, and connects to a checked address,
// so the address checked is the address connected to. With OUTBOUND_PROXY, undici's ProxyAgent.
import { lookup as dnsLookup } from "node:dns/promises";
import type { Duplex } from "node:stream";
import { Agent, buildConnector, ProxyAgent, type Dispatcher } from "undici";
import type { Outbound, OutboundRequest, OutboundResponse } from "./http/outbound.ts";
import {
  allowedAddresses,
  allowList,
  parseTarget,
  readBounded,
  type ResolveHost,
  withinTime,
} from "./http/outbound-rules.ts";

/** How long a connection may take to resolve and connect (the request's own bound may be shorter). */
const CONNECT_TIMEOUT_MS = 10_000;

/** The connection a request is about to open, after its address passed the rules. */
export interface ConnectTarget {
  /** The URL's host (a name, or an address without brackets). */
  hostname: string;
  /** A checked address to connect to (every address of the name passed; they are tried in the resolver's order). */
  address: string;
  port: number;
  protocol: "http:" | "https:";
}

export interface NodeOutboundOptions {
  /** WEBHOOK_ALLOW_HOSTS: hosts exempt from the address rules, which may also use http. */
  allowHosts?: readonly string[];
  /** OUTBOUND_PROXY: every request goes through this proxy, which then decides where it may go. */
  proxyUrl?: string;
  /** Every address of a name; node:dns by default. Called at `check` and at every new connection. */
  lookup?: ResolveHost;
  /**
   * Opens the connection to the checked address: by default TCP to `address`, with TLS for https
   * whose SNI and certificate check use `hostname`. Tests map a "public" address to a local server.
   */
  connect?: (target: ConnectTarget) => Duplex | Promise<Duplex>;
}

export type NodeOutbound = Outbound & {
  /** Closes the pooled connections. */
  close(): Promise<void>;
};

/** Every address of a name as the system resolver answers it, in its own order. */
export const systemLookup: ResolveHost = async (hostname) => (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

type ConnectOptions = { hostname: string; host?: string; protocol: string; port: string | number; servername?: string; localAddress?: string | null };
type ConnectCallback = (err: Error | null, socket: Duplex | null) => void;

/** A connector that opens nothing it has not checked: undici calls it for every new connection. */
function pinnedConnector(allow: Set<string>, lookup: ResolveHost, open: NodeOutboundOptions["connect"]) {
  const tcpOrTls = buildConnector({ timeout: CONNECT_TIMEOUT_MS });
  return (options: ConnectOptions, callback: ConnectCallback): void => {
    const protocol = options.protocol === "http:" ? "http:" : "https:";
    const port = Number(options.port) || (protocol === "https:" ? 443 : 80);
    void (async () => {
      // the URL's rules and the address rules again at connection time: a name may answer
      // differently now than when it was checked
      const target = parseTarget(`${protocol}//${options.hostname}:${port}/`, allow);
      const hostname = target.hostname;
      const addresses = await allowedAddresses(target, lookup, CONNECT_TIMEOUT_MS);
      // every address passed: the first that accepts the connection gets it (a name with an
      // IPv6 address on a host without IPv6 still reaches its IPv4 one)
      let failure: unknown;
      for (const address of addresses) {
        try {
          if (open) return await connected(await open({ hostname, address, port, protocol }));
          return await new Promise<Duplex>((resolve, reject) =>
            tcpOrTls(
              { hostname: address, host: options.host, protocol, port: String(port), servername: target.literal ? undefined : hostname, localAddress: options.localAddress ?? null },
              (err, socket) => (err ? reject(err) : resolve(socket as Duplex)),
            ),
          );
        } catch (err) {
          failure = err;
        }
      }
      throw failure;
    })().then(
      (socket) => callback(null, socket),
      (err: Error) => callback(err, null),
    );
  };
}

/** Waits for a socket a custom connector returned still connecting. */
function connected(socket: Duplex): Promise<Duplex> {
  if (!(socket as { connecting?: boolean }).connecting) return Promise.resolve(socket);
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

function responseHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
}

/**
 * The Node.js outbound: the server builds one from its configuration (src/main.ts), and so does
 * any process that sends to user-given URLs (`createNodeOutbound(config.outbound)`).
 */
export function createNodeOutbound(options: NodeOutboundOptions = {}): NodeOutbound {
  const allow = allowList(options.allowHosts ?? []);
  const lookup = options.lookup ?? systemLookup;
  const dispatcher: Dispatcher & { close(): Promise<void> } = options.proxyUrl
    ? new ProxyAgent({ uri: options.proxyUrl })
    : new Agent({ connect: pinnedConnector(allow, lookup, options.connect) as unknown as buildConnector.connector });
  return {
    async check(url) {
      await allowedAddresses(parseTarget(url, allow), lookup, CONNECT_TIMEOUT_MS);
    },
    async send(request: OutboundRequest): Promise<OutboundResponse> {
      const target = parseTarget(request.url, allow);
      const { url } = target;
      return await withinTime(request.timeoutMs, async (signal) => {
        // through a proxy, which resolves the name again and decides, this only refuses what is
        // already known bad; without one, the connector checks every new connection
        if (options.proxyUrl && !target.allowed) await allowedAddresses(target, lookup, request.timeoutMs);
        const res = await dispatcher.request({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: request.method,
          headers: request.headers,
          body: request.body,
          signal,
        });
        const body = await readBounded(res.body, request.maxBytes);
        return { status: res.statusCode, headers: responseHeaders(res.headers), body };
      });
    },
    close: () => dispatcher.close(),
  };
}
