// The schedule as plain functions of the time, and ticks against the database: each task runs
// once per daily slot across instances, a failed run is tried again at the next tick, and a task
// that never ran runs at the first tick after start.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { FAKE_X_TOKEN, startFakeX, type FakeX } from "../support/fake-x.ts";
import { createClock } from "../support/server.ts";
import { address, importIndex } from "../support/http.ts";
import { readConfig } from "../../src/config.ts";
import { latestSlot, nextTick, runDueTasks, tickCron } from "../../src/maintenance/schedule.ts";
import type { MaintenanceDeps } from "../../src/maintenance/run.ts";

const AT = { hour: 3, minute: 15 };

describe("the maintenance schedule", () => {
  test("the latest daily slot at or before a time", () => {
    assert.equal(latestSlot(new Date("2026-11-20T03:15:00Z"), AT).toISOString(), "2026-11-20T03:15:00.000Z");
    assert.equal(latestSlot(new Date("2026-11-20T03:14:59Z"), AT).toISOString(), "2026-11-19T03:15:00.000Z");
    assert.equal(latestSlot(new Date("2026-11-20T23:59:00Z"), AT).toISOString(), "2026-11-20T03:15:00.000Z");
    assert.equal(latestSlot(new Date("2026-03-01T00:00:00Z"), AT).toISOString(), "2026-02-28T03:15:00.000Z");
  });

  test("the next hourly tick is strictly later, at the slot's minute", () => {
    assert.equal(nextTick(new Date("2026-11-20T03:14:59Z"), AT).toISOString(), "2026-11-20T03:15:00.000Z");
    assert.equal(nextTick(new Date("2026-11-20T03:15:00Z"), AT).toISOString(), "2026-11-20T04:15:00.000Z");
    assert.equal(nextTick(new Date("2026-11-20T23:40:00Z"), AT).toISOString(), "2026-11-21T00:15:00.000Z");
    assert.equal(tickCron(AT), "15 * * * *");
  });

  test("MAINTENANCE_AT and REACHABILITY_DAILY_LIMIT", () => {
    assert.deepEqual(readConfig({}).maintenance, { at: { hour: 3, minute: 0 }, reachabilityDailyLimit: 10_000 });
    assert.deepEqual(readConfig({ MAINTENANCE_AT: "23:05", REACHABILITY_DAILY_LIMIT: "500" }).maintenance, {
      at: { hour: 23, minute: 5 },
      reachabilityDailyLimit: 500,
    });
    assert.equal(readConfig({ MAINTENANCE_AT: "off" }).maintenance.at, undefined);
    assert.throws(() => readConfig({ MAINTENANCE_AT: "3am" }), { message: "Cannot start: MAINTENANCE_AT must be HH:MM (UTC) or off" });
    assert.throws(() => readConfig({ MAINTENANCE_AT: "24:00" }), { message: "Cannot start: MAINTENANCE_AT must be HH:MM (UTC) or off" });
    assert.throws(() => readConfig({ REACHABILITY_DAILY_LIMIT: "-1" }), { message: "Cannot start: REACHABILITY_DAILY_LIMIT must be a whole number" });
  });
});

eachDatabase("maintenance ticks", (get) => {
  let x: FakeX;
  before(async () => {
    x = await startFakeX();
  });
  after(() => x.close());

  test("each task runs once per slot; a failed run is tried again at the next tick", async () => {
    const { db } = get();
    await importIndex(db, [{ wallet: address(1, "5"), kind: "twitter", route: "x-signin", handle: "alice" }], new Date("2026-11-20T10:00:00Z"));
    x.live("alice");
    const clock = createClock("2026-11-20T10:15:00Z");
    const deps: MaintenanceDeps = {
      db,
      now: clock.now,
      log: () => {},
      x: { baseUrl: x.url, bearerToken: FAKE_X_TOKEN },
      reachabilityDailyLimit: 100,
      sleep: async (ms) => clock.advance(ms),
    };
    const statuses = async () => (await runDueTasks(deps, AT)).map((r) => `${r.task}:${r.status}`);

    // never ran: due at the first tick after start, even before the day's slot
    x.script({ kind: "status", status: 503 }, { kind: "status", status: 503 }, { kind: "status", status: 503 });
    assert.deepEqual(await statuses(), ["reachability:failed", "stats:done"]);

    clock.set("2026-11-20T11:15:00Z");
    assert.deepEqual(await statuses(), ["reachability:done", "stats:skipped"]);

    clock.set("2026-11-21T02:15:00Z");
    assert.deepEqual(await statuses(), ["reachability:skipped", "stats:skipped"]);

    clock.set("2026-11-21T03:15:00Z");
    assert.deepEqual(await statuses(), ["reachability:done", "stats:done"]);
    assert.equal(x.calls.length, 5, "three failed tries, then one call a day");

    clock.set("2026-11-21T04:15:00Z");
    const skipped = await runDueTasks(deps, AT);
    assert.deepEqual(skipped[1], { task: "stats", status: "skipped", reason: "already done since 2026-11-21T03:15:00.000Z" });
  });

  test("without the X API, hourly ticks report the re-check off without logging it each time", async () => {
    const { db } = get();
    const clock = createClock("2026-11-22T05:15:00Z");
    const logs: string[] = [];
    const deps: MaintenanceDeps = { db, now: clock.now, log: (line) => logs.push(line), reachabilityDailyLimit: 100 };
    for (const at of ["2026-11-22T05:15:00Z", "2026-11-22T06:15:00Z"]) {
      clock.set(at);
      const reports = await runDueTasks(deps, AT);
      assert.deepEqual(reports[0], { task: "reachability", status: "off", reason: "X_API_URL and X_BEARER_TOKEN are not set" });
    }
    assert.deepEqual(logs.filter((l) => l.includes("is off")), []);
  });
});
