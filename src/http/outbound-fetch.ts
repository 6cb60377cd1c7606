// Outbound requests on runtimes whose fetch cannot be told which address to connect to (Deno,
// Bun): without an egress proxy every request is refused (`unpinnable`); with one, a request whose
// name resolves here to a refused address is refused, the rest go through the proxy, which
// enforces where they may go. Node pins instead (src/outbound-node.ts).
import { readAtMost } from "./body.ts";
import { OutboundError, type Outbound, type OutboundRequest, type OutboundResponse } from "./outbound.ts";
import { allowList, allowedAddresses, parseTarget, tooLarge, withinTime, type ResolveHost } from "./outbound-rules.ts";

/** How long `check` waits for the resolver. */
const CHECK_RESOLVE_MS = 5_000;

export interface FetchOutboundOptions {
  /** The runtime's name, for the refusal's message. */
  runtime: string;
  allowHosts: readonly string[];
  resolve: ResolveHost;
  /** fetch through OUTBOUND_PROXY (Deno's createHttpClient({proxy}), Bun's fetch({proxy})); none: every request is refused. */
  proxiedFetch?: (url: string, init: RequestInit) => Promise<Response>;
}

export function createFetchOutbound(options: FetchOutboundOptions): Outbound {
  const allow = allowList(options.allowHosts);
  const proxiedFetch = options.proxiedFetch;
  const unpinnable = () =>
    new OutboundError(
      "unpinnable",
      `requests to user-given URLs are off: ${options.runtime} cannot connect to the address it checked, so set OUTBOUND_PROXY to an egress proxy (or run on Node.js)`,
    );
  return {
    async check(url) {
      const target = parseTarget(url, allow);
      if (!proxiedFetch) throw unpinnable();
      await allowedAddresses(target, options.resolve, CHECK_RESOLVE_MS);
    },
    async send(request: OutboundRequest): Promise<OutboundResponse> {
      const target = parseTarget(request.url, allow);
      if (!proxiedFetch) throw unpinnable();
      return await withinTime(request.timeoutMs, async (signal) => {
        // the proxy resolves the name again and decides; this only refuses what is already known bad
        if (!target.allowed) await allowedAddresses(target, options.resolve, request.timeoutMs);
        const res = await proxiedFetch(target.url.href, { method: request.method, headers: request.headers, body: request.body, redirect: "manual", signal });
        const body = await readAtMost(res, request.maxBytes);
        if (!body) throw tooLarge(request.maxBytes);
        return { status: res.status, headers: res.headers, body };
      });
    },
  };
}
