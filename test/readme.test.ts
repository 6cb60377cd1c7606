// The README's curl walk-through, run verbatim (only the port differs) against `npm start`'s entry
// point on a fresh embedded data directory.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const ROOT = new URL("..", import.meta.url).pathname;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function walkthrough(): string {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Try it"));
  const match = /```sh\n([\s\S]*?)```/.exec(section);
  assert.ok(match, "README has a sh block under 'Try it'");
  return match[1];
}

test("the README walk-through works against a fresh `npm start`", { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "walletid-readme-"));
  const port = await freePort();
  const server = spawn(process.execPath, ["--import", "tsx", join(ROOT, "src/main.ts")], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: join(dir, ".data"), PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  server.stdout.on("data", (d) => (output += d));
  server.stderr.on("data", (d) => (output += d));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start: ${output}`)), 90_000);
      server.stdout.on("data", () => {
        if (output.includes("listening on")) {
          clearTimeout(timer);
          resolve();
        }
      });
      server.once("exit", (code) => reject(new Error(`server exited ${code}: ${output}`)));
    });
    assert.match(output, /Demo API key/);
    assert.match(output, /wid_live_[A-Za-z0-9]{32}/);

    const script = walkthrough().replaceAll("localhost:8787", `127.0.0.1:${port}`);
    const { stdout } = await promisify(execFile)("bash", ["-euo", "pipefail", "-c", script], { cwd: dir });
    for (const expected of [
      '"handle":"alice_onchain"',
      '"self_declared":true',
      '"also":{"handle":"carol_alt"',
      "x-data-staleness: stale",
      '"found":false,"checked_at":"',
      '"found":false,"checked_at":null',
      '"meta":{"requested":3,"found":2,"not_found":1,"matched":1}',
      '"meta":{"handle":"based_club","total_count":150,"returned_count":100,"truncated":true,"next_cursor":"',
      '"returned_count":50,"truncated":false,"next_cursor":null}',
      '"farcaster":{"username":"alice"',
      '"requested":12,"in_index":8,"previously_checked_empty":1,"never_checked":3',
      '"billable_predicate":"x_or_farcaster"',
      '"code":"INVALID_ADDRESS"',
      '"status":"completed","progress":{"processed":3,"total":3,"stage":null}',
      '"meta":{"requested":3,"matched":2,"found":2,"not_found":1,"offset":0,"limit":1000,"next_offset":null}',
      '"total_wallets":',
      '"period":"day"',
    ]) {
      assert.ok(stdout.toLowerCase().includes(expected.toLowerCase()), `walk-through output lacks ${expected}:\n${stdout}`);
    }
  } finally {
    server.kill("SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
  }
});
