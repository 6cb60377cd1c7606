// The address a request comes from, for limits keyed on it (the MCP hourly limit, OAuth
// registration) and for the loopback check of /metrics.

/**
 * The client's address: the connection's peer with `trustProxy` 0; behind N trusted proxies,
 * the address N hops back in X-Forwarded-For (the peer being the last hop), so entries a client
 * wrote into the header itself are never used. "unknown" when the runtime gave no peer.
 */
export function clientAddress(req: Request, peer: string | undefined, trustProxy: number): string {
  const hops = [
    ...(trustProxy > 0 ? (req.headers.get("x-forwarded-for") ?? "").split(",").map((s) => s.trim()).filter(Boolean) : []),
    peer ?? "unknown",
  ];
  return hops[Math.max(0, hops.length - 1 - trustProxy)];
}
