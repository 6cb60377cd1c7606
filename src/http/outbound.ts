// Requests to URLs a user gave us (webhook endpoints, OAuth client metadata documents): the one
// interface every such request goes through, whatever the runtime. The rules it keeps are in
// docs/operating.md, "Outbound requests"; src/http/outbound-rules.ts holds them, Node's
// implementation is src/outbound-node.ts (`createNodeOutbound(config.outbound)` in any Node
// process), Deno's and Bun's src/http/outbound-fetch.ts.

/** One request to a user-given URL. Redirects are never followed: a 3xx comes back as a response. */
export interface OutboundRequest {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  /** The whole exchange, connecting to the last byte of the body, is cut at this many milliseconds. */
  timeoutMs: number;
  /** A response body longer than this many bytes ends the request with `too_large`. */
  maxBytes: number;
}

export interface OutboundResponse {
  status: number;
  headers: Headers;
  body: Uint8Array;
}

/**
 * Why an outbound request was refused or did not complete:
 * - `url`: the URL's form is refused (scheme, credentials, a host that is an address in a refused range);
 * - `address`: the host resolved to an address in a refused range (at the check, or at the connection);
 * - `unpinnable`: this runtime cannot connect to the address it checked, and no proxy is configured;
 * - `timeout`, `too_large`, `network`: the request was allowed but did not complete.
 */
export type OutboundFailure = "url" | "address" | "unpinnable" | "timeout" | "too_large" | "network";

export class OutboundError extends Error {
  constructor(
    readonly reason: OutboundFailure,
    message: string,
  ) {
    super(message);
    this.name = "OutboundError";
  }
}

export interface Outbound {
  /**
   * Checks a URL's form, and that its host resolves now only to allowed addresses. Throws
   * `OutboundError` (`unpinnable` too, on a runtime that can make no such request at all).
   */
  check(url: string): Promise<void>;
  /** Sends one request, connected only to an address that passed the rules at connection time. Throws `OutboundError`. */
  send(request: OutboundRequest): Promise<OutboundResponse>;
}
