// npm run mcp:stdio: the eight MCP tools over standard input and output, for local MCP hosts that
// launch a command and cannot send headers. The key comes from WALLETID_API_KEY; the tools, the
// metering and the database configuration (DATABASE_URL / DATA_DIR) are the server's.
// Standard output carries the protocol only: every log line goes to standard error.
import process from "node:process";
import { join } from "node:path";
import { readConfig } from "../src/config.ts";
import { acquireDataDirLock } from "../src/db/datadir-lock.ts";
import { openDatabase } from "../src/db/open.ts";
import { serveMcpStdio } from "../src/mcp/stdio.ts";
import { createOperationDeps } from "../src/operations/deps.ts";

async function main(): Promise<void> {
  const key = process.env.WALLETID_API_KEY?.trim();
  if (!key) throw new Error("Cannot start: set WALLETID_API_KEY to your walletid API key (wid_live_…)");
  const config = readConfig(process.env);
  const log = (line: string) => {
    if (config.logLevel !== "silent") console.error(line);
  };
  const release = config.databaseUrl ? () => {} : acquireDataDirLock(config.dataDir);
  const db = await openDatabase({ databaseUrl: config.databaseUrl, max: 2, pooler: config.databasePooler, dataDir: config.databaseUrl ? undefined : join(config.dataDir, "pgdata") });
  const stdio = await serveMcpStdio(createOperationDeps({ db, config, log }), key);

  let closing = false;
  const shutdown = async () => {
    if (closing) return;
    closing = true;
    await stdio.close();
    await db.close();
    release();
    process.exit(0);
  };
  process.stdin.on("end", shutdown);
  process.stdin.on("close", shutdown);
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

main().catch((err: Error) => {
  console.error(err.message.startsWith("Cannot") || err.message.startsWith("The embedded") ? err.message : `Cannot start: ${err.message}`);
  process.exit(1);
});
