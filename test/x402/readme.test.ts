// The x402 walk-through, run as written (only the ports differ): `npm run facilitator` and `npm
// start` on a fresh embedded data directory as processes, then buy.ts (docs/payments.md) and the
// README's pay.ts (a keyless lookup paid per call) with the official client.
import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { freePort } from "../support/ports.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** The text of `file` from the heading `heading` to the next heading of the same level. */
function sectionOf(file: string, heading: string): string {
  const text = readFileSync(join(ROOT, file), "utf8");
  const start = text.indexOf(`\n${heading}`);
  assert.ok(start >= 0, `${file} has the section '${heading}'`);
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

function section(): { sh: string; ts: string; pay: string } {
  const readme = sectionOf("README.md", "## Paying with x402");
  const sh = /```sh\n([\s\S]*?)```/.exec(readme);
  const pay = /```ts\n([\s\S]*?)```/.exec(readme);
  assert.ok(sh && pay, "README has the sh block and the pay.ts block under 'Paying with x402'");
  const docs = sectionOf("docs/payments.md", "## Buying a pack: a walk-through");
  const ts = /```ts\n([\s\S]*?)```/.exec(docs);
  assert.ok(ts, "docs/payments.md has the buy.ts block under 'Buying a pack: a walk-through'");
  // the page starts the same two processes as the README
  const docsSh = /```sh\n([\s\S]*?)```/.exec(docs)?.[1] ?? "";
  const starts = (block: string) => block.split("\n").filter((l) => /npm (run facilitator|start)/.test(l)).map((l) => l.replace(/\s*#.*$/, ""));
  assert.deepEqual(starts(docsSh), starts(sh[1]), "docs/payments.md starts the facilitator and the server as the README does");
  assert.match(ts[1], /^\/\/ buy\.ts:/, "the block is buy.ts");
  assert.match(pay[1], /^\/\/ pay\.ts:/, "the block is pay.ts");
  return { sh: sh[1], ts: ts[1], pay: pay[1] };
}

function started(child: ChildProcess, pattern: RegExp, what: string): Promise<string> {
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start: ${output}`)), 240_000);
    const look = (d: Buffer) => {
      output += d;
      if (pattern.test(output)) {
        clearTimeout(timer);
        resolve(output);
      }
    };
    child.stdout!.on("data", look);
    child.stderr!.on("data", look);
    child.once("exit", (code) => reject(new Error(`${what} exited ${code}: ${output}`)));
  });
}

function stop(child: ChildProcess): Promise<unknown> {
  if (child.exitCode !== null) return Promise.resolve();
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  return exited;
}

test("the x402 walk-through (README and docs/payments.md) works against `npm run facilitator` and a fresh `npm start`", { timeout: 400_000 }, async () => {
  const { sh, ts, pay } = section();
  // the commands the README gives, with their variables
  const payTo = /X402_PAY_TO=(0x[0-9a-fA-F]{40})/.exec(sh)?.[1];
  assert.ok(payTo && sh.includes("npm run facilitator") && sh.includes("X402_FACILITATOR_URL=http://127.0.0.1:8402") && sh.includes("npm start"));
  assert.ok(sh.includes("npx tsx buy.ts") && sh.includes("npx tsx pay.ts") && sh.includes("docs/payments.md"));

  const dir = mkdtempSync(join(tmpdir(), "walletid-x402-readme-"));
  const script = join(ROOT, `.readme-buy-${crypto.randomUUID()}.ts`);
  const payScript = join(ROOT, `.readme-pay-${crypto.randomUUID()}.ts`);
  const [facilitatorPort, port] = [await freePort(), await freePort()];
  const facilitator = spawn(process.execPath, ["--import", "tsx", join(ROOT, "scripts/facilitator.ts")], {
    cwd: ROOT,
    env: { ...process.env, FACILITATOR_PORT: String(facilitatorPort) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const server = spawn(process.execPath, ["--import", "tsx", join(ROOT, "src/main.ts")], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATA_DIR: join(dir, ".data"),
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: "",
      X402_FACILITATOR_URL: `http://127.0.0.1:${facilitatorPort}`,
      X402_PAY_TO: payTo,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  try {
    const line = await started(facilitator, /listening on/, "the facilitator");
    assert.match(line, new RegExp(`x402 facilitator listening on http://127\\.0\\.0\\.1:${facilitatorPort} `));
    const log = await started(server, /listening on/, "the server");
    assert.doesNotMatch(log, /Purchases are off/);

    writeFileSync(script, ts);
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", script], {
      cwd: ROOT,
      env: { ...process.env, WALLETID_URL: `http://127.0.0.1:${port}`, FACILITATOR_URL: `http://127.0.0.1:${facilitatorPort}` },
    });
    assert.match(stdout, /^200 \{\s+api_key: 'wid_live_[A-Za-z0-9]{32}',\s+shown_once: true,\s+matches_added: 24,/m, stdout);
    assert.match(stdout, /^200 \{\s+handle: 'alice_onchain'/m, stdout);
    assert.match(stdout, /^200 \{\s+api_key: 'wid_live_[A-Za-z0-9]{32}',\s+key_prefix: 'wid_live_\w{3}',\s+revoked_prefixes: \[\]/m, stdout);

    // pay.ts: a keyless lookup paid per call, and a miss that costs nothing
    writeFileSync(payScript, pay);
    const paid = await promisify(execFile)(process.execPath, ["--import", "tsx", payScript], {
      cwd: ROOT,
      env: { ...process.env, WALLETID_URL: `http://127.0.0.1:${port}`, FACILITATOR_URL: `http://127.0.0.1:${facilitatorPort}` },
    });
    assert.match(paid.stdout, /^200 alice_onchain paid 83334$/m, paid.stdout);
    assert.match(paid.stdout, /^200 false paid null$/m, paid.stdout);
    assert.match(paid.stdout, /^balance 916666$/m, paid.stdout);

    const balance = await (await fetch(`http://127.0.0.1:${facilitatorPort}/balance/${payTo}`)).json();
    assert.deepEqual(balance, { address: payTo.toLowerCase(), balance: "2083334" }, "2 USDC for the packs and one paid match reached X402_PAY_TO");
  } finally {
    rmSync(script, { force: true });
    rmSync(payScript, { force: true });
    await Promise.all([stop(server), stop(facilitator)]);
    rmSync(dir, { recursive: true, force: true });
  }
});
