// Pinning does not weaken TLS: the connection goes to the checked address, while the server name
// and the certificate are checked against the URL's host. Runs test/support/outbound-tls-child.ts
// in a process that trusts the test certificate (NODE_EXTRA_CA_CERTS is read only at start).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { ROOT } from "../support/process.ts";

test("https to a pinned address: the certificate must be the URL host's", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", join(ROOT, "test/support/outbound-tls-child.ts")], {
    cwd: ROOT,
    env: { ...process.env, NODE_EXTRA_CA_CERTS: join(ROOT, "test/support/tls/hook.example.crt") },
    timeout: 60_000,
  });
  const result = JSON.parse(stdout);
  assert.deepEqual(result.named, { status: 200, body: "over tls" }, "hook.example's certificate is accepted for hook.example");
  assert.equal(result.other.reason, "network", "the same certificate is refused for other.example");
  assert.match(result.other.message, /ERR_TLS_CERT_ALTNAME_INVALID/);
  assert.equal(result.hosts.length, 1, "nothing reached the server over the refused connection");
  assert.match(result.hosts[0], /^hook\.example:\d+$/);
});
