// Debian's PgBouncer (1.18, no prepared-statement support) in transaction mode, in front of a
// PostgreSQL, on a free port with an ini of its own in a temporary directory: for the tests and the soak.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.ts";

export const PGBOUNCER = process.env.PGBOUNCER_PATH ?? "/usr/sbin/pgbouncer";
export const PGBOUNCER_INSTALL = "install Debian's pgbouncer package (apt-get install -y pgbouncer; .ci/run does this)";

export interface Pgbouncer {
  /** `target` with its host and port replaced by the pooler's. */
  url: string;
  port: number;
  /** Its log so far (connections, errors). */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer in transaction mode in front of `target` (a postgres:// URL; trust
 * authentication for its user, as the machine's PostgreSQL gives the tests). As root it runs as
 * `nobody`: PgBouncer refuses to run as root.
 */
export async function startPgbouncer(target: string, options: { poolSize?: number; maxClients?: number } = {}): Promise<Pgbouncer> {
  if (!existsSync(PGBOUNCER)) throw new Error(`Cannot start PgBouncer: ${PGBOUNCER} is missing (${PGBOUNCER_INSTALL})`);
  const upstream = new URL(target);
  const dir = mkdtempSync(join(tmpdir(), "walletid-pgbouncer-"));
  chmodSync(dir, 0o755);
  const port = await freePort();
  const user = decodeURIComponent(upstream.username || "postgres");
  const ini = join(dir, "pgbouncer.ini");
  const logPath = join(dir, "pgbouncer.log");
  writeFileSync(join(dir, "users.txt"), `"${user}" ""\n`);
  writeFileSync(
    ini,
    [
      "[databases]",
      `* = host=${upstream.hostname} port=${upstream.port || 5432}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "users.txt")}`,
      `logfile = ${logPath}`,
      "pool_mode = transaction",
      `max_client_conn = ${options.maxClients ?? 1000}`,
      `default_pool_size = ${options.poolSize ?? 20}`,
      "log_connections = 0",
      "log_disconnections = 0",
      "",
    ].join("\n"),
  );
  for (const file of ["users.txt", "pgbouncer.ini"]) chmodSync(join(dir, file), 0o644);
  writeFileSync(logPath, "");
  chmodSync(logPath, 0o666);
  const asRoot = process.getuid?.() === 0;
  const child = spawn(PGBOUNCER, [...(asRoot ? ["-u", "nobody"] : []), ini], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const log = () => {
    try {
      // PgBouncer writes its lines to the file and to stderr alike
      return readFileSync(logPath, "utf8") || stderr;
    } catch {
      return stderr;
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const output = log();
      await stop();
      throw new Error(`Cannot start PgBouncer: ${output.trim().split("\n").slice(-5).join("\n")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return { url: url.toString(), port, log, stop };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
