// @modelcontextprotocol/conformance (0.2.0-alpha.12, pinned) `authorization` scenarios against a
// started server: authorization-server-metadata-endpoint and authorization-code-grant. The tool
// prints an authorization URL and waits for its loopback callback; the test plays the person:
// opens the consent page, approves with an API key, and follows the redirect to the tool.
// The tool needs Node 22 (fs.globSync); it runs under the pinned Bun, a devDependency.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { freePort } from "../support/ports.ts";
import { createCustomer, type TestServer } from "../support/server.ts";
import { answerConsent, openConsent, register, startOAuthServer } from "./support.ts";

const REPO = new URL("../..", import.meta.url).pathname;
const BUN = join(REPO, "node_modules/.bin/bun");
const CONFORMANCE = join(REPO, "node_modules/@modelcontextprotocol/conformance/dist/index.js");

async function followToCallback(location: string): Promise<void> {
  // the tool starts its callback server just after printing the URL: retry a refused connection
  for (let attempt = 0; ; attempt++) {
    try {
      await (await fetch(location)).text();
      return;
    } catch (err) {
      if (attempt >= 20) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

eachDatabase("conformance authorization scenarios", (get) => {
  let server: TestServer;
  let apiKey: string;

  before(async () => {
    server = await startOAuthServer(get().db);
    ({ apiKey } = await createCustomer(get().db, { now: new Date() }));
  });
  after(() => server.close());

  for (const withResource of [false, true]) {
    test(`every check passes${withResource ? " with --resource" : " (no resource, no scope sent)"}`, { timeout: 180_000 }, async () => {
      const port = await freePort();
      const client = await register(server, { redirect_uris: [`http://127.0.0.1:${port}/callback`], client_name: "conformance" });
      const out = mkdtempSync(join(tmpdir(), "walletid-conformance-"));
      try {
        const args = [CONFORMANCE, "authorization", "--url", server.url, "--client-id", client.client_id, "--port", String(port), "-o", out];
        if (withResource) args.push("--resource", `${server.url}/mcp`);
        const child = spawn(BUN, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
        let stdout = "";
        let stderr = "";
        let consented: Promise<void> | undefined;
        child.stderr.on("data", (d) => (stderr += d));
        child.stdout.on("data", (d) => {
          stdout += d;
          const url = /^(http\S+\/api\/oauth\/authorize\?\S+)$/m.exec(stdout)?.[1];
          if (!url || consented) return;
          consented = (async () => {
            const page = await openConsent(url);
            assert.equal(page.status, 200, page.html);
            const res = await answerConsent(page, { apiKey, decision: "approve" });
            assert.equal(res.status, 303, await res.text());
            await followToCallback(res.headers.get("location")!);
          })();
        });
        const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
        assert.ok(consented, `the tool printed an authorization URL:\n${stdout}\n${stderr}`);
        await consented;
        assert.equal(code, 0, `conformance exit ${code}:\n${stdout}\n${stderr}`);
        assert.match(stdout, /Total: 3 passed, 0 failed/);
        const checks = readdirSync(out).flatMap((dir) => JSON.parse(readFileSync(join(out, dir, "checks.json"), "utf8")) as Array<{ id: string; status: string }>);
        assert.deepEqual(
          checks.map((c) => [c.id, c.status]).sort(),
          [
            ["authorization-code-grant", "SUCCESS"],
            ["authorization-server-metadata", "SUCCESS"],
            ["authorization-server-metadata-cimd", "SUCCESS"],
          ].sort(),
          JSON.stringify(checks, null, 1).slice(0, 3000),
        );
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    });
  }
});
