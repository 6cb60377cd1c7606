// Which failures mean "the database is unavailable, retry shortly" (503) and which are faults of
// a statement (500), class by class; and the client deadlines every driver uses.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isDatabaseUnavailable } from "../../src/db/errors.ts";
import { boundedTransaction, DatabaseTimeoutError, withDeadline } from "../../src/db/deadline.ts";

/** A PostgresError as postgres.js builds it: the ErrorResponse fields on an Error. */
function postgresError(code: string, severity: string, message: string): Error {
  return Object.assign(new Error(message), { name: "PostgresError", code, severity, severity_local: severity });
}

/** A Node system error, as a socket emits it. */
function socketError(code: string, syscall: string): Error {
  return Object.assign(new Error(`${syscall} ${code} 127.0.0.1:5432`), { code, errno: -1, syscall, address: "127.0.0.1", port: 5432 });
}

/** postgres.js's own connection errors: code and errno set, no syscall. */
function driverError(code: string): Error {
  return Object.assign(new Error(`write ${code} 127.0.0.1:5432`), { code, errno: code, address: "127.0.0.1", port: 5432 });
}

describe("isDatabaseUnavailable", () => {
  const unavailable: Array<[string, Error]> = [
    ["08000 connection exception", postgresError("08000", "ERROR", "connection exception")],
    ["08006 connection failure", postgresError("08006", "FATAL", "connection failure")],
    ["08001 client unable to establish connection", postgresError("08001", "ERROR", "could not connect")],
    ["08P01 protocol violation", postgresError("08P01", "FATAL", "invalid frontend message type")],
    ["57P01 admin shutdown (pg_terminate_backend)", postgresError("57P01", "FATAL", "terminating connection due to administrator command")],
    ["57P02 crash shutdown", postgresError("57P02", "FATAL", "terminating connection because of crash of another server process")],
    ["57P03 cannot connect now", postgresError("57P03", "FATAL", "the database system is starting up")],
    ["57P04 database dropped", postgresError("57P04", "FATAL", "terminating connection due to database being dropped")],
    ["57P05 idle session timeout", postgresError("57P05", "FATAL", "terminating connection due to idle-session timeout")],
    ["57014 statement timeout", postgresError("57014", "ERROR", "canceling statement due to statement timeout")],
    ["53300 too many connections", postgresError("53300", "FATAL", "sorry, too many clients already")],
    ["53100 disk full", postgresError("53100", "ERROR", "could not extend file: No space left on device")],
    ["53200 out of memory", postgresError("53200", "ERROR", "out of memory")],
    ["55000 not accepting connections (FATAL)", postgresError("55000", "FATAL", 'database "x" is not currently accepting connections')],
    ["3D000 database does not exist (FATAL)", postgresError("3D000", "FATAL", 'database "x" does not exist')],
    ["a PANIC", postgresError("XX000", "PANIC", "could not write to log file")],
    ["ECONNREFUSED", socketError("ECONNREFUSED", "connect")],
    ["ECONNRESET", socketError("ECONNRESET", "read")],
    ["EPIPE", socketError("EPIPE", "write")],
    ["ETIMEDOUT", socketError("ETIMEDOUT", "connect")],
    ["EHOSTUNREACH", socketError("EHOSTUNREACH", "connect")],
    ["ENOTFOUND (DNS)", socketError("ENOTFOUND", "getaddrinfo")],
    ["an unlisted socket error (carries syscall)", socketError("ENOBUFS", "write")],
    ["CONNECTION_CLOSED", driverError("CONNECTION_CLOSED")],
    ["CONNECTION_ENDED", driverError("CONNECTION_ENDED")],
    ["CONNECTION_DESTROYED", driverError("CONNECTION_DESTROYED")],
    ["CONNECT_TIMEOUT", driverError("CONNECT_TIMEOUT")],
    ["our own deadline", new DatabaseTimeoutError(4000)],
    ["a socket error as the cause of another", new Error("fetch failed", { cause: socketError("ECONNREFUSED", "connect") })],
  ];
  for (const [name, err] of unavailable) {
    test(`${name}: unavailable`, () => assert.equal(isDatabaseUnavailable(err), true));
  }

  const faults: Array<[string, unknown]> = [
    ["23505 unique violation", postgresError("23505", "ERROR", "duplicate key value violates unique constraint")],
    ["42601 syntax error", postgresError("42601", "ERROR", 'syntax error at or near "SELEC"')],
    ["22P02 invalid text representation", postgresError("22P02", "ERROR", "invalid input syntax for type uuid")],
    ["55000 at ERROR (a statement's own state)", postgresError("55000", "ERROR", "lastval is not yet defined in this session")],
    ["57000 operator intervention, not 57P", postgresError("57000", "ERROR", "operator intervention")],
    ["a TypeError", new TypeError("Cannot read properties of undefined")],
    ["a plain Error", new Error("something else")],
    ["a code without syscall that is not a connection code", Object.assign(new Error("x"), { code: "ERR_INVALID_ARG_TYPE" })],
    ["a string", "ECONNREFUSED"],
    ["null", null],
  ];
  for (const [name, err] of faults) {
    test(`${name}: not unavailable (500)`, () => assert.equal(isDatabaseUnavailable(err), false));
  }
});

describe("client deadlines", () => {
  const never = () => new Promise<never>(() => {});

  test("withDeadline: an answer in time passes through, its failure too", async () => {
    assert.equal(await withDeadline(Promise.resolve(7), 1000), 7);
    await assert.rejects(withDeadline(Promise.reject(new Error("boom")), 1000), /boom/);
  });

  test("withDeadline: no answer is DatabaseTimeoutError after the deadline, and onTimeout runs", async () => {
    let stuck = 0;
    const started = performance.now();
    await assert.rejects(withDeadline(never(), 50, () => stuck++), (err) => err instanceof DatabaseTimeoutError && isDatabaseUnavailable(err));
    assert.ok(performance.now() - started >= 45);
    assert.equal(stuck, 1);
  });

  test("boundedTransaction: a BEGIN that never answers fails at the deadline, and the body never runs late", async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let ran = false;
    let late: Promise<number> = Promise.resolve(0);
    const begin = (body: (tx: string) => Promise<number>) => (late = gate.then(() => body("tx")));
    await assert.rejects(
      boundedTransaction(begin, async () => ((ran = true), 1), 50),
      (err) => err instanceof DatabaseTimeoutError,
    );
    release();
    await assert.rejects(late, (err) => err instanceof DatabaseTimeoutError, "the late BEGIN rolls back");
    assert.equal(ran, false);
  });

  test("boundedTransaction: the body is not bounded, a COMMIT that never answers is", async () => {
    const slowBody = boundedTransaction((body) => body("tx"), async () => (await new Promise((r) => setTimeout(r, 120)), 5), 50);
    assert.equal(await slowBody, 5, "a body longer than the deadline is fine: its statements have their own");
    const stuckCommit = boundedTransaction((body: (tx: string) => Promise<number>) => body("tx").then(never), async () => 5, 50);
    await assert.rejects(stuckCommit, (err) => err instanceof DatabaseTimeoutError);
  });
});
