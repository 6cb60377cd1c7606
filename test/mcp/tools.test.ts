// The MCP tools end to end through a real listening server, with the v1 SDK client (2025
// revisions) and the v2 client pinned to 2026-07-28: after every spending call the ledger, the
// balance and the /usage route keys say what the REST API would have said.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { W } from "../support/fixtures.ts";
import { debitsOf, rateWindowOf, usageCountsOf } from "../support/http.ts";
import { fixtureSuite, json } from "../support/server.ts";
import { connect, type ClientKind, type McpTestClient } from "./support.ts";

const TOOLS = [
  "walletid_resolve_wallets",
  "walletid_estimate_list",
  "walletid_submit_job",
  "walletid_job_status",
  "walletid_reverse_twitter",
  "walletid_reverse_farcaster",
  "walletid_account_balance",
  "walletid_index_stats",
  "walletid_watch_wallets",
  "walletid_unwatch_wallets",
];
/** Free tools that change the account's state (not read-only). */
const WRITING = new Set(["walletid_watch_wallets", "walletid_unwatch_wallets"]);
const SPENDING = new Set(["walletid_resolve_wallets", "walletid_submit_job", "walletid_reverse_twitter", "walletid_reverse_farcaster"]);

function ok(result: { isError?: boolean; content: Array<{ text?: string }>; structuredContent?: any }) {
  assert.notEqual(result.isError, true, `tool error: ${result.content[0]?.text}`);
  assert.ok(result.structuredContent, "structuredContent is present");
  assert.deepEqual(JSON.parse(result.content[0].text!), result.structuredContent, "the text block is the same object");
  return result.structuredContent;
}

for (const kind of ["v1", "v2"] as ClientKind[]) {
  eachDatabase(`MCP tools through the ${kind} client`, (get) => {
    const suite = fixtureSuite(get);
    let client: McpTestClient;
    before(async () => {
      client = await connect(kind, suite.server.url, suite.key);
    });
    after(() => client.close());

    const balance = async () => ok(await client.callTool("walletid_account_balance", {})).credits.available as number;
    const routesUsed = async () => {
      const usage = await json(await suite.server.request("/api/v1/usage?period=day", { key: suite.key }));
      return usage.data.usage.requests_by_endpoint as Record<string, number>;
    };

    test("speaks the expected protocol revision", () => {
      assert.equal(client.protocolVersion, kind === "v1" ? "2025-11-25" : "2026-07-28");
    });

    test("lists the ten tools with schemas and annotations", async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
      for (const tool of tools) {
        assert.ok(tool.title && tool.description && tool.description.length > 80, `${tool.name} has a title and a description`);
        assert.equal((tool.inputSchema as { type: string }).type, "object");
        assert.equal((tool.outputSchema as { type: string }).type, "object", `${tool.name} has an output schema`);
        assert.equal(tool.annotations?.readOnlyHint, !SPENDING.has(tool.name) && !WRITING.has(tool.name), `${tool.name} readOnlyHint`);
      }
      const resolve = tools.find((t) => t.name === "walletid_resolve_wallets")!;
      assert.match(resolve.description!, /match credit/);
      assert.deepEqual((resolve.inputSchema as { required: string[] }).required, ["wallets"]);
    });

    test("walletid_resolve_wallets with one address: the single path, billed and recorded as GET /wallet", async () => {
      suite.nextMinute();
      const before = await balance();
      const debits = (await debitsOf(get().db, suite.accountId)).length;
      const out = ok(await client.callTool("walletid_resolve_wallets", { wallets: [W.full.toUpperCase().replace("0X", "0x")] }));
      assert.equal(out.billed_matches, 1);
      assert.equal(out.quota.credits_available, before, "quota is the balance before this call's debit");
      assert.equal(out.quota.rate_limits.minute.remaining, 59, "this call's one unit (the balance tool is free)");
      const [record] = out.records;
      assert.equal(record.wallet, W.full);
      assert.equal(record.found, true);
      assert.equal(record.attested, true);
      assert.deepEqual(record.x, { handle: "alice", verified: true });
      assert.equal(record.reaches_someone, true);
      assert.equal(record.reachability, "live");
      assert.equal(record.farcaster.fid, 3);
      assert.equal(record.stale, false);
      assert.equal(record.previously_checked, true);
      assert.equal(await balance(), before - 1);
      const rows = await debitsOf(get().db, suite.accountId);
      assert.equal(rows.length, debits + 1);
      assert.equal(rows.at(-1)!.matches, 1);
      assert.ok((await routesUsed())["/v1/wallet/{address}"] >= 1);
    });

    test("walletid_resolve_wallets with a list: duplicates removed, the batch path, trimmed records", async () => {
      suite.nextMinute();
      const before = await balance();
      const window = await rateWindowOf(get().db, suite.accountId);
      const wallets = [W.selfDeclared, W.aggregated, W.neverSeen, W.empty, W.ensOnly, W.selfDeclared, W.stale, W.unclassified];
      const out = ok(await client.callTool("walletid_resolve_wallets", { wallets }));
      assert.equal(out.requested, 7);
      assert.deepEqual(
        out.records.map((r: { wallet: string }) => r.wallet),
        [W.selfDeclared, W.aggregated, W.neverSeen, W.empty, W.ensOnly, W.stale, W.unclassified],
      );
      const byWallet = Object.fromEntries(out.records.map((r: { wallet: string }) => [r.wallet, r]));
      assert.equal(byWallet[W.selfDeclared].x.self_declared, true);
      assert.equal(byWallet[W.selfDeclared].attested, true);
      assert.equal(byWallet[W.aggregated].attested, false, "correlation alone");
      assert.equal(byWallet[W.unclassified].attested, null, "no classified evidence");
      assert.deepEqual(byWallet[W.neverSeen], { wallet: W.neverSeen, found: false, previously_checked: false });
      assert.deepEqual(byWallet[W.empty], { wallet: W.empty, found: false, previously_checked: true });
      assert.equal(byWallet[W.ensOnly].ens_name, "eve.eth");
      assert.equal(byWallet[W.stale].stale, true);
      // selfDeclared, aggregated, stale and unclassified resolve to twitter: 4 credits
      assert.equal(out.billed_matches, 4);
      assert.equal(out.quota.credits_available, before);
      assert.equal(await balance(), before - 4);
      const after = await rateWindowOf(get().db, suite.accountId);
      assert.equal(after!.day_used - window!.day_used, 8, "rate units: every address sent, as POST /batch");
      assert.ok((await routesUsed())["/v1/batch"] >= 1);
    });

    test("walletid_estimate_list: counts only, free, recorded as POST /estimate", async () => {
      suite.nextMinute();
      const before = await balance();
      const wallets = [W.full, W.selfDeclared, W.twoHandles, W.corrected, W.ensOnly, W.aggregated, W.stale, W.empty, W.neverSeen, W.agent];
      const out = ok(await client.callTool("walletid_estimate_list", { wallets }));
      assert.equal(out.requested, 10);
      assert.equal(out.never_checked, 1);
      assert.equal(out.previously_checked_empty, 1);
      assert.equal(out.billed_matches, 0);
      assert.equal(await balance(), before);
      assert.ok((await routesUsed())["/v1/estimate"] >= 1);
    });

    test("walletid_submit_job then walletid_job_status: billed once at completion, results paged from offset", async () => {
      suite.nextMinute();
      const before = await balance();
      const out = ok(await client.callTool("walletid_submit_job", { wallets: [W.full, W.farcasterOnly, W.neverSeen, W.full] }));
      assert.equal(out.job.status, "completed", "4 addresses run inline");
      assert.equal(out.job.wallets, 3);
      assert.equal(out.billed_matches, 0);
      const status = ok(await client.callTool("walletid_job_status", { job_id: out.job.job_id }));
      assert.equal(status.job.status, "completed");
      assert.equal(status.matched, 2);
      assert.equal(status.results.length, 3);
      assert.equal(status.results[0].x.handle, "alice");
      assert.equal(status.next_offset, null);
      const paged = ok(await client.callTool("walletid_job_status", { job_id: out.job.job_id, offset: 2 }));
      assert.deepEqual(paged.results.map((r: { wallet: string }) => r.wallet), [W.neverSeen]);
      assert.equal(await balance(), before - 2);
      const jobDebit = (await debitsOf(get().db, suite.accountId)).filter((d) => d.call_key === `job:${out.job.job_id}`);
      assert.equal(jobDebit.reduce((s, d) => s + d.matches, 0), 2);
      const routes = await routesUsed();
      assert.ok(routes["/v1/jobs"] >= 1 && routes["/v1/jobs/{id}"] >= 2);
      const unknown = await client.callTool("walletid_job_status", { job_id: crypto.randomUUID() });
      assert.equal(unknown.isError, true);
      assert.match(unknown.content[0].text!, /JOB_NOT_FOUND/);
    });

    test("walletid_reverse_twitter and walletid_reverse_farcaster: one credit per wallet returned", async () => {
      suite.nextMinute();
      const before = await balance();
      const tw = ok(await client.callTool("walletid_reverse_twitter", { handle: "@Alice" }));
      assert.equal(tw.handle, "alice");
      assert.deepEqual(tw.records.map((r: { wallet: string }) => r.wallet), [W.full]);
      assert.equal(tw.next_cursor, null);
      assert.equal(tw.billed_matches, 1);
      const fc = ok(await client.callTool("walletid_reverse_farcaster", { username: "alice" }));
      assert.equal(fc.username, "alice");
      assert.equal(fc.total_count, 1);
      assert.equal(fc.billed_matches, 1);
      assert.equal(fc.quota.credits_available, before - 1);
      assert.equal(await balance(), before - 2);
      const routes = await routesUsed();
      assert.ok(routes["/v1/reverse/twitter/{handle}"] >= 1 && routes["/v1/reverse/farcaster/{username}"] >= 1);
    });

    test("walletid_watch_wallets and walletid_unwatch_wallets: the REST data objects, free, one rate unit, recorded as /watchlist", async () => {
      suite.nextMinute();
      const before = await balance();
      const window = await rateWindowOf(get().db, suite.accountId);
      const added = ok(await client.callTool("walletid_watch_wallets", { wallets: [W.full, W.neverSeen, W.full] }));
      assert.equal(added.added, 2);
      assert.equal(added.already_watched, 0);
      assert.ok(added.total >= 2);
      assert.equal(added.billed_matches, 0);
      assert.equal(added.quota.credits_available, before);
      const again = ok(await client.callTool("walletid_watch_wallets", { wallets: [W.full] }));
      assert.deepEqual([again.added, again.already_watched, again.total], [0, 1, added.total]);
      const removed = ok(await client.callTool("walletid_unwatch_wallets", { wallets: [W.full, W.neverSeen] }));
      assert.deepEqual([removed.removed, removed.total], [2, added.total - 2]);
      const bad = await client.callTool("walletid_watch_wallets", { wallets: ["0x12"] });
      assert.equal(bad.isError, true);
      const after = await rateWindowOf(get().db, suite.accountId);
      assert.equal(after!.day_used - window!.day_used, 3, "one unit a call let through; the refusal and the balance are free");
      assert.equal(await balance(), before);
      assert.ok((await routesUsed())["/v1/watchlist"] >= 3);
    });

    test("walletid_account_balance and walletid_index_stats: free, recorded as /usage and /stats", async () => {
      const bal = ok(await client.callTool("walletid_account_balance", {}));
      assert.equal(bal.plan, "Developer");
      assert.equal(bal.plan_limits.max_batch_size, 50);
      assert.equal(bal.credits.unmetered, false);
      const stats = ok(await client.callTool("walletid_index_stats", {}));
      assert.ok(stats.total_wallets >= 10);
      assert.equal(stats.billed_matches, 0);
      assert.ok((await routesUsed())["/v1/usage"] >= 1, "the balance tool is recorded under /v1/usage");
      const events = await usageCountsOf(get().db, suite.accountId);
      const statsEvent = events.filter((e) => e.route === "/v1/stats").at(-1)!;
      assert.equal(statsEvent.units, 0);
      assert.equal(statsEvent.status, 200);
    });
  });
}
