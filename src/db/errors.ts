// Telling "the database is unavailable, retry shortly" from every other failure, by class: the
// HTTP layer answers the first 503 with Retry-After and the rest 500.
import { DatabaseTimeoutError } from "./deadline.ts";

// SQLSTATE classes and codes that say the database cannot serve now, whatever the statement:
// 08 connection exception; 53 insufficient resources (53300 too many connections, out of memory,
// disk full); 57P admin shutdown, crash shutdown, cannot connect now, database dropped, idle
// session timeout; 57014 a statement cancelled (statement_timeout).
const UNAVAILABLE_SQLSTATE = /^(08...|53...|57P..|57014)$/;

// Errors of the client's connection rather than of a statement: postgres.js's own codes, and the
// operating system's socket errors (which also carry `syscall`).
const CONNECTION_CODES = new Set([
  "CONNECTION_CLOSED", "CONNECTION_ENDED", "CONNECTION_DESTROYED", "CONNECT_TIMEOUT", "DATABASE_TIMEOUT",
  "ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "EHOSTDOWN",
  "ENETUNREACH", "ENETDOWN", "ENOTFOUND", "EAI_AGAIN", "ENOTCONN",
]);

interface ErrorFields {
  code?: unknown;
  severity?: unknown;
  syscall?: unknown;
  cause?: unknown;
}

/**
 * True when `err` says the database is unreachable or refusing work for now: a connection or
 * socket failure, a FATAL or PANIC error (the session is gone, e.g. 55000 "database is not
 * currently accepting connections"), one of the SQLSTATE classes above, or our own deadline.
 */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== "object" || depth > 3) return false;
  const e = err as ErrorFields;
  const code = typeof e.code === "string" ? e.code : "";
  if (err instanceof DatabaseTimeoutError || CONNECTION_CODES.has(code)) return true;
  if (UNAVAILABLE_SQLSTATE.test(code)) return true;
  if (e.severity === "FATAL" || e.severity === "PANIC") return true;
  if (typeof e.syscall === "string" && /^E[A-Z]+$/.test(code)) return true;
  return isDatabaseUnavailable(e.cause, depth + 1);
}
