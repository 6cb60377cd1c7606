// Third-party MCP tools against a started server: the MCP Inspector CLI (v1 line, pinned) lists
// the tools and calls one, and the server scenarios of @modelcontextprotocol/conformance that fit
// a tools-only server pass (initialize, ping, tools/list, DNS-rebinding protection).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { W } from "../support/fixtures.ts";
import { debitsOf } from "../support/http.ts";
import { fixtureSuite } from "../support/server.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
const INSPECTOR = join(ROOT, "node_modules/@modelcontextprotocol/inspector-cli/build");
const CONFORMANCE = join(ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const BUN = join(ROOT, "node_modules/.bin/bun");

function run(file: string, args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

eachDatabase("MCP Inspector CLI and conformance scenarios", (get) => {
  const suite = fixtureSuite(get);
  let work: string;
  before(() => {
    work = mkdtempSync(join(tmpdir(), "walletid-mcp-"));
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  // the v1 CLI finds its own package.json relative to the working directory: run it from its build folder
  const inspector = (args: string[]) => run(process.execPath, [join(INSPECTOR, "cli.js"), "--cli", `${suite.server.url}/mcp`, "--transport", "http", ...args], INSPECTOR);

  test("the Inspector CLI lists the ten tools", async () => {
    const out = await inspector(["--method", "tools/list"]);
    assert.equal(out.code, 0, out.stderr);
    const names = JSON.parse(out.stdout).tools.map((t: { name: string }) => t.name);
    assert.equal(names.length, 10);
    assert.ok(names.includes("walletid_resolve_wallets"));
  });

  test("the Inspector CLI calls walletid_resolve_wallets with a key and is billed", async () => {
    const before = (await debitsOf(get().db, suite.accountId)).length;
    const out = await inspector([
      "--header",
      `Authorization: Bearer ${suite.key}`,
      "--method",
      "tools/call",
      "--tool-name",
      "walletid_resolve_wallets",
      "--tool-arg",
      `wallets=${JSON.stringify([W.full])}`,
    ]);
    assert.equal(out.code, 0, out.stderr);
    const result = JSON.parse(out.stdout);
    assert.equal(result.isError, undefined, out.stdout);
    assert.equal(result.structuredContent.records[0].x.handle, "alice");
    assert.equal((await debitsOf(get().db, suite.accountId)).length, before + 1);
  });

  // conformance (0.2.0-alpha.12, pinned for the OAuth authorization scenarios too) imports fs.globSync (Node 22); it runs under the pinned Bun
  for (const scenario of ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]) {
    test(`conformance: ${scenario}`, async () => {
      const out = await run(BUN, [CONFORMANCE, "server", "--url", `${suite.server.url}/mcp`, "--scenario", scenario], work);
      const text = out.stdout + out.stderr;
      assert.equal(out.code, 0, text);
      assert.match(text, /Passed: (\d+)\/\1, 0 failed, 0 warnings/, text);
    });
  }
});
