// `npm start`'s entry point runs the maintenance in-process (Node here; Bun the same way, Deno
// through Deno.cron): on a database where the tasks never ran, both run right after start.
import assert from "node:assert/strict";
import { test } from "node:test";
import { spawn } from "node:child_process";
import { createPostgresDatabase } from "../support/db.ts";
import { FAKE_X_TOKEN, startFakeX } from "../support/fake-x.ts";
import { openDatabase } from "../../src/db/open.ts";
import { importObservations } from "../../src/index/import.ts";

/** The messages of the server's JSON log lines, one a line (other output kept as it is). */
function messages(output: string): string {
  return output
    .split("\n")
    .map((line) => {
      try {
        return (JSON.parse(line) as { msg?: string }).msg ?? line;
      } catch {
        return line;
      }
    })
    .join("\n");
}

const ROOT = new URL("../..", import.meta.url).pathname;

test("the server re-checks reachability and materializes stats after start", { timeout: 60_000 }, async () => {
  const { url, drop } = await createPostgresDatabase();
  const db = await openDatabase({ databaseUrl: url, max: 1 });
  const x = await startFakeX();
  try {
    await importObservations(
      db,
      ["alice", "bob"].map((handle, i) =>
        JSON.stringify({ wallet: `0x${String(i + 1).padStart(40, "0")}`, kind: "twitter", route: "x-signin", handle }),
      ),
      { now: new Date() },
    );
    x.live("alice");
    x.suspend("bob");
    const server = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url, PORT: "0", HOST: "127.0.0.1", X_API_URL: x.url, X_BEARER_TOKEN: FAKE_X_TOKEN },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const exited = new Promise<number | null>((resolve) => server.once("exit", resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no stats run: ${output}`)), 45_000);
        const seen = () => {
          if (messages(output).includes('"task":"stats","status":"done"')) {
            clearTimeout(timer);
            resolve();
          }
        };
        server.stdout.on("data", (d) => ((output += d), seen()));
        server.stderr.on("data", (d) => ((output += d), seen()));
        void exited.then((code) => reject(new Error(`server exited ${code}: ${output}`)));
      });
      assert.match(messages(output), /Maintenance: \{"task":"reachability","status":"done","checked":2,"live":1,"suspended":1/);
      const rows = await db.query("SELECT handle, reachability FROM twitter_reachability ORDER BY handle");
      assert.deepEqual(rows, [{ handle: "alice", reachability: "live" }, { handle: "bob", reachability: "suspended" }]);
      const [stats] = await db.query<{ counts: { twitter: number } }>("SELECT counts FROM stats_snapshots");
      assert.equal(stats.counts.twitter, 2);
    } finally {
      server.kill("SIGTERM");
      assert.equal(await exited, 0, output);
    }
  } finally {
    await x.close();
    await db.close();
    await drop();
  }
});
