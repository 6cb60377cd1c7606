// An Outbound for tests: plain fetch without following redirects, to receivers on 127.0.0.1 only
// (the real module, with its address rules and pinning, is src/http/ of the entry points).
import { OutboundError, type Outbound, type OutboundRequest } from "../../src/http/outbound.ts";

export function loopbackOutbound(options: { onSend?: (request: OutboundRequest) => void } = {}): Outbound & { sent: OutboundRequest[] } {
  const sent: OutboundRequest[] = [];
  const allowed = (url: string) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new OutboundError("url", "not a URL");
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new OutboundError("url", "scheme refused");
    if (parsed.hostname !== "127.0.0.1") throw new OutboundError("address", "only 127.0.0.1 receivers in tests");
  };
  return {
    sent,
    async check(url) {
      allowed(url);
    },
    async send(request) {
      allowed(request.url);
      sent.push(request);
      options.onSend?.(request);
      let res: Response;
      try {
        res = await fetch(request.url, {
          method: request.method,
          headers: request.headers,
          body: request.body,
          redirect: "manual",
          signal: AbortSignal.timeout(request.timeoutMs),
        });
      } catch (err) {
        throw new OutboundError((err as Error).name === "TimeoutError" ? "timeout" : "network", (err as Error).message);
      }
      const body = new Uint8Array(await res.arrayBuffer());
      if (body.length > request.maxBytes) throw new OutboundError("too_large", "answer too large");
      return { status: res.status, headers: res.headers, body };
    },
  };
}
