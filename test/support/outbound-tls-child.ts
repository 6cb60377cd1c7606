// Run by test/http/outbound-tls.test.ts in a process that trusts test/support/tls/hook.example.crt
// (NODE_EXTRA_CA_CERTS, read only at start): sends through the default connector, pinned to
// 127.0.0.1, to a TLS server holding that certificate, and prints what happened as JSON.
import { readFileSync } from "node:fs";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { OutboundError } from "../../src/http/outbound.ts";
import { createNodeOutbound } from "../../src/outbound-node.ts";

const dir = join(import.meta.dirname, "tls");
const hosts: string[] = [];
const server = createServer({ key: readFileSync(join(dir, "hook.example.key")), cert: readFileSync(join(dir, "hook.example.crt")) }, (req, res) => {
  hosts.push(req.headers.host ?? "");
  res.end("over tls");
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = (server.address() as AddressInfo).port;
// both names are exempt from the address rules (their only address is 127.0.0.1), not from TLS
const outbound = createNodeOutbound({ allowHosts: ["hook.example", "other.example"], lookup: async () => ["127.0.0.1"] });
const outcome = async (host: string) => {
  try {
    const res = await outbound.send({ url: `https://${host}:${port}/`, method: "GET", headers: {}, timeoutMs: 5000, maxBytes: 1024 });
    return { status: res.status, body: new TextDecoder().decode(res.body) };
  } catch (err) {
    return err instanceof OutboundError ? { reason: err.reason, message: err.message } : { thrown: String(err) };
  }
};
const result = { named: await outcome("hook.example"), other: await outcome("other.example"), hosts };
await outbound.close();
server.close();
process.stdout.write(JSON.stringify(result));
