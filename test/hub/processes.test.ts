// The hub sync as separate processes: `admin ingest farcaster --follow` killed -9 in the middle of
// a page resumes without loss or duplicates (PGlite files and PostgreSQL), and two servers with
// FARCASTER_HUB_URL on one database never sync at once.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPostgresDatabase } from "../support/db.ts";
import { ROOT, BIN, startProcess, serverNodeFlags, type Running } from "../support/process.ts";
import { address } from "../support/http.ts";
import { startFakeHub, type FakeHub } from "../support/fake-hub.ts";
import { openDatabase } from "../../src/db/open.ts";
import type { Db } from "../../src/db/types.ts";
import { readSync } from "../../src/hub/store.ts";

const wallet = (fid: number, k: number) => address(fid * 10 + k, "d");

interface Child {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | string | null>;
}

function admin(args: string[], env: Record<string, string>): Child {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, PATH: `${BIN}:${process.env.PATH}`, HUB_LEASE_SECONDS: "2", HUB_POLL_MS: "50", ...env },
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  return { child, stdout: () => out, stderr: () => err, exited: new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal))) };
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The index's hub-written farcaster identities against what the hub says now. */
async function assertMatchesHub(db: Db, hub: FakeHub): Promise<void> {
  const truth = hub.truth();
  const expected = truth.verifications
    .filter((v) => truth.usernames.has(v.fid))
    .map((v) => `${v.address}|${v.fid}|${truth.usernames.get(v.fid)}`)
    .sort();
  const rows = await db.query<{ wallet: string; fid: string; username: string }>(
    "SELECT l.wallet, l.fid::text, fa.username FROM links l JOIN farcaster_accounts fa ON fa.fid = l.fid WHERE l.kind = 'farcaster' ORDER BY 1, 2",
  );
  assert.deepEqual(rows.map((r) => `${r.wallet}|${r.fid}|${r.username}`).sort(), expected, "every verification once, with its username, and no other");
  const reverse = await db.query<{ key: string; wallet: string }>("SELECT key, wallet FROM reverse_entries WHERE kind = 'farcaster'");
  assert.deepEqual(reverse.map((r) => `${r.wallet}|${r.key}`).sort(), rows.map((r) => `${r.wallet}|${r.username}`).sort(), "reverse entries match");
}

for (const kind of ["pglite", "postgres"] as const) {
  describe(`admin ingest farcaster --follow killed -9 [${kind}]`, () => {
    let hub: FakeHub;
    let env: Record<string, string>;
    let cleanup: () => Promise<void>;
    let open: () => Promise<Db>;

    before(async () => {
      hub = await startFakeHub({ numShards: 2, fidsPageSize: 2, eventsPageSize: 4, firstEventId: 2n ** 53n + 17n });
      for (let fid = 1; fid <= 6; fid++) hub.seed(fid, { username: `p${fid}`, addresses: [wallet(fid, 0), wallet(fid, 1)] });
      hub.addCast(1);
      if (kind === "pglite") {
        const dir = mkdtempSync(join(tmpdir(), "walletid-hub-"));
        env = { DATA_DIR: dir };
        open = () => openDatabase({ dataDir: join(dir, "pgdata") });
        cleanup = async () => rmSync(dir, { recursive: true, force: true });
      } else {
        const created = await createPostgresDatabase();
        env = { DATABASE_URL: created.url };
        open = () => openDatabase({ databaseUrl: created.url, max: 1 });
        cleanup = created.drop;
      }
    });
    after(async () => {
      await hub.close();
      await cleanup();
    });

    test("the backfill prints its counts; the follower killed mid-page resumes without loss or duplicates", async () => {
      const backfill = admin(["ingest", "farcaster", "--hub", hub.url], env);
      assert.equal(await backfill.exited, 0, backfill.stderr());
      assert.deepEqual(JSON.parse(backfill.stdout()), { fids: 6, addresses: 12, observations: 12, last_event_id: hub.headEventId.toString() });

      // 7 pages of events; the fourth holds a username for an fid the index never saw, whose
      // verifications the follower asks the hub for: that request hangs, and the follower dies there
      for (let fid = 1; fid <= 6; fid++) hub.addVerification(fid, wallet(fid, 2));
      hub.removeVerification(1, wallet(1, 0));
      hub.setUsername(2, "p2-renamed");
      hub.dropVerification(3, wallet(3, 1), "revoke");
      hub.addCast(4);
      hub.addCast(4);
      hub.addCast(4);
      hub.seed(60, { addresses: [wallet(60, 0)] });
      hub.setUsername(60, "p60");
      hub.addVerification(5, wallet(5, 3));
      for (let i = 0; i < 10; i++) hub.addVerification(6, wallet(6, 4 + (i % 3)));
      hub.removeVerification(6, wallet(6, 5));
      let hung = false;
      hub.behave({ slow: (path, q) => (hung = hung || (path === "/v1/verificationsByFid" && q.get("fid") === "60")), delayMs: 60_000 });

      const first = admin(["ingest", "farcaster", "--hub", hub.url, "--follow"], env);
      await waitFor(() => hung || first.child.exitCode !== null, "the follower reaching the hanging request");
      assert.equal(first.child.exitCode, null, first.stderr());
      first.child.kill("SIGKILL");
      assert.equal(await first.exited, "SIGKILL");
      hub.behave({});

      // its lease (HUB_LEASE_SECONDS=2) expires on its own; until then another run is refused
      await new Promise((r) => setTimeout(r, 2100));
      const second = admin(["ingest", "farcaster", "--hub", hub.url, "--follow"], env);
      const head = hub.headEventId;
      // caught up: it asks twice for the events after the newest (the first ask may go out while
      // the last page is still being applied; the second comes after an empty answer)
      let asked = 0;
      const caughtUp = () => asked >= 2;
      hub.onRequest = (path, q) => void (path === "/v1/events" && BigInt(q.get("from_event_id") ?? "0") === head + 1n && asked++);
      await waitFor(() => caughtUp() || second.child.exitCode !== null, "the second follower catching up");
      hub.onRequest = undefined;
      second.child.kill("SIGTERM");
      assert.equal(await second.exited, 0, second.stderr());
      // a backfill had finished: the second run only followed, from where the first stopped
      assert.equal(JSON.parse(second.stdout()).last_event_id, head.toString());

      const db = await open();
      try {
        await assertMatchesHub(db, hub);
        const state = await readSync(db);
        assert.equal(state.lastEventId, head);
        assert.equal(state.holder, null, "SIGTERM released the lease");
      } finally {
        await db.close();
      }
    });
  });
}

describe("two servers with FARCASTER_HUB_URL on one PostgreSQL database", () => {
  let hub: FakeHub;
  let url: string;
  let drop: () => Promise<void>;
  const servers: Running[] = [];

  before(async () => {
    hub = await startFakeHub({ numShards: 2, fidsPageSize: 2, eventsPageSize: 4 });
    for (let fid = 1; fid <= 6; fid++) hub.seed(fid, { username: `s${fid}`, addresses: [wallet(fid, 0)] });
    ({ url, drop } = await createPostgresDatabase());
  });
  after(async () => {
    for (const s of servers) await s.stop();
    await hub.close();
    await drop();
  });

  test("one follows, the other waits; killed -9, the follower's lease passes to the other", async () => {
    const env = { DATABASE_URL: url, FARCASTER_HUB_URL: hub.url, HUB_LEASE_SECONDS: "2", HUB_POLL_MS: "50", MAINTENANCE_AT: "off", WORKER: "0" };
    const db = await openDatabase({ databaseUrl: url, max: 1 });
    try {
      servers.push(await startProcess(process.execPath, [...serverNodeFlags(), "--import", "tsx", "src/main.ts"], env));
      servers.push(await startProcess(process.execPath, [...serverNodeFlags(), "--import", "tsx", "src/main.ts"], env));
      const following = () => servers.filter((s) => s.output().includes("Hub: following"));
      const waiting = () => servers.filter((s) => s.output().includes("another process is syncing the hub"));
      await waitFor(() => following().length === 1 && waiting().length === 1, "one following, one waiting");
      const [leader] = following();
      const [other] = waiting();
      assert.notEqual(leader, other);

      hub.addVerification(1, wallet(1, 1));
      await waitFor(async () => (await readSync(db)).lastEventId === hub.headEventId, "the event applied");
      // over a few lease lifetimes the waiting server never starts following
      await new Promise((r) => setTimeout(r, 3000));
      assert.ok(!other.output().includes("Hub: following"), other.output());
      assert.equal(following().length, 1);

      leader.child.kill("SIGKILL");
      await leader.exited;
      hub.addVerification(2, wallet(2, 1));
      await waitFor(() => other.output().includes("Hub: following"), "the other server taking over");
      await waitFor(async () => (await readSync(db)).lastEventId === hub.headEventId, "the event applied by the other");
      const rows = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM links WHERE kind = 'farcaster'");
      assert.equal(rows[0].n, 8);
    } finally {
      await db.close();
    }
  });
});
