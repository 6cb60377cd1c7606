// Group commit of metered calls: the calls of a process that arrive while its metering statement
// is in flight are metered together by the next one (meter_calls), one statement and one commit
// for all of them. No timer: a call arriving when a lane is free is metered once the event loop has
// handled the rest of the input it read with it (endOfTurn), together with the calls that input
// brought.
import type { Db, Row } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { columnsAt, memoColumns } from "../db/columns.ts";
import { uuidv7 } from "../ledger/call-keys.ts";
import { identityColumns, identityRowAt, type IdentityRow } from "../index/records.ts";
import { endOfTurn } from "./turn.ts";

export interface GroupedCall {
  digest: string;
  weight: number;
  needsCredits: boolean;
  listSize: number | null;
  /** Deduplicated addresses to bill, or null. */
  bill: string[] | null;
  /** The billable matches among `bill` when the caller read them itself, or null to count them. */
  matched: number | null;
  /** Addresses whose identity rows to read when the call is let through, or null. */
  lookup: string[] | null;
}

export interface GroupedAnswer<T> {
  /** The call's metering outcome; undefined when the answer was cut short. */
  outcome: T | undefined;
  /** The identity rows of its lookup, read whatever the outcome: use them only when it is ok. */
  identities: IdentityRow[];
  /** The time the batch was metered at. */
  now: Date;
}

interface Pending {
  call: GroupedCall;
  now: () => Date;
  resolve: (answer: GroupedAnswer<Row>) => void;
  reject: (err: unknown) => void;
}

interface Group {
  queue: Pending[];
  inFlight: number;
  /** The stall watch of calls waiting behind busy lanes, while one is set. */
  watch: ReturnType<typeof setTimeout> | undefined;
  /** Whether a free lane's statement is due at the end of this turn of the event loop. */
  due: boolean;
}

/** More calls than this wait for the next statement: one statement stays a few milliseconds. */
const MAX_CALLS = 256;

/**
 * Statements in flight at once per process. One: a second lane let the next group's key check
 * and identity reads run while the previous group held its locks, but the groups got smaller and
 * the bench measured more CPU per request in both processes (server 247 against 165 µs,
 * PostgreSQL 210 against 140) and fewer requests a second (1,798 against 2,263).
 */
export const METER_LANES = 1;

/**
 * A call never waits long behind a stalled statement: when calls have waited this long and every
 * lane is still busy (a database that stopped answering holds a statement up to its deadline),
 * another lane takes them, up to MAX_STALL_LANES. So a call's answer is bounded by this wait plus
 * its own statement's deadline, not by the deadline of the statement before it too. A normal
 * group statement takes a few milliseconds; the watch never delays a call that could go at once.
 */
const STALL_MS = 300;
const MAX_STALL_LANES = 8;

const groups = new WeakMap<Db, Group>();

/**
 * Meters one call with the others of its group on `db`. Resolves once the statement holding it
 * has committed; rejects with the statement's error (every call of that statement does).
 */
export function meterGrouped<T extends Row>(db: Db, now: () => Date, call: GroupedCall): Promise<GroupedAnswer<T>> {
  let group = groups.get(db);
  if (!group) {
    group = { queue: [], inFlight: 0, watch: undefined, due: false };
    groups.set(db, group);
  }
  const answer = new Promise<GroupedAnswer<Row>>((resolve, reject) => group.queue.push({ call, now, resolve, reject }));
  if (group.inFlight < METER_LANES) dispatchAfterInput(db, group);
  else watchStall(db, group);
  return answer as Promise<GroupedAnswer<T>>;
}

/**
 * Starts a free lane's statement once the event loop has handled the rest of this turn's input
 * (endOfTurn: a MessageChannel message, or the entry point's setImmediate): requests that arrive
 * together go together. Sent at once instead, the first call of a burst went alone and the rest
 * waited for it; under 32 connections a fifth of the statements metered one call (docs/performance.md,
 * "Kept, and why"). No timer, no clamp.
 */
function dispatchAfterInput(db: Db, group: Group): void {
  if (group.due) return;
  group.due = true;
  void endOfTurn().then(() => {
    group.due = false;
    if (group.queue.length === 0) return;
    if (group.inFlight < METER_LANES) void drain(db, group, true);
    else watchStall(db, group);
  });
}

function watchStall(db: Db, group: Group): void {
  if (group.watch !== undefined) return;
  group.watch = setTimeout(() => {
    group.watch = undefined;
    if (group.queue.length === 0) return;
    if (group.inFlight < MAX_STALL_LANES) void drain(db, group, false);
    if (group.queue.length > 0) watchStall(db, group);
  }, STALL_MS);
}

/**
 * Meters the queue's calls, a statement at a time. The lane's statements run on its own connection
 * (`onLane`: Db QueryOptions.lane); a stall lane's on the pool, not behind the statement that hangs.
 */
async function drain(db: Db, group: Group, onLane: boolean): Promise<void> {
  group.inFlight++;
  try {
    while (group.queue.length > 0) {
      const batch = group.queue.splice(0, MAX_CALLS);
      const at = batch[0].now();
      try {
        const { columns, rows } = await db.queryArrays(sql("meter_calls"), statementParams(batch, at), { lane: onLane });
        const answers = batch.map((): GroupedAnswer<Row> => ({ outcome: undefined, identities: [], now: at }));
        if (rows.length > 0) {
          const { outcome, identity } = columnsOf(columns);
          for (const r of rows) {
            const answer = answers[(r[outcome.call_ix] as number) - 1];
            if (r[outcome.outcome] === null) answer.identities.push(identityRowAt(r, identity));
            else answer.outcome = outcomeAt(r, outcome);
          }
        }
        batch.forEach((p, i) => p.resolve(answers[i]));
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
  } finally {
    group.inFlight--;
  }
}

/**
 * Where meter_calls (00017) puts each column: a call's outcome row, then identity_rows' columns.
 * The rows come as arrays (35 columns, most of them null in any one row) and are read into objects
 * of one shape each, instead of the driver setting every column of every row by name.
 */
const OUTCOME_COLUMNS = [
  "call_ix", "outcome", "key_id", "account_id", "account_bound", "plan", "limit_minute", "limit_day", "limit_month",
  "max_batch_size", "used_minute", "used_day", "used_month", "available", "unmetered", "matched", "billed",
  "idem_request_hash", "idem_status", "idem_body",
] as const;

type OutcomeColumns = { readonly [K in (typeof OUTCOME_COLUMNS)[number]]: number };

/** meter_calls' columns, looked up once. */
const columnsOf = memoColumns((names) => ({
  outcome: columnsAt(names, OUTCOME_COLUMNS, "meter_calls"),
  identity: identityColumns(names, "meter_calls"),
}));

/** A call's outcome row. */
function outcomeAt(r: readonly unknown[], at: OutcomeColumns): Row {
  return {
    outcome: r[at.outcome],
    key_id: r[at.key_id],
    account_id: r[at.account_id],
    account_bound: r[at.account_bound],
    plan: r[at.plan],
    limit_minute: r[at.limit_minute],
    limit_day: r[at.limit_day],
    limit_month: r[at.limit_month],
    max_batch_size: r[at.max_batch_size],
    used_minute: r[at.used_minute],
    used_day: r[at.used_day],
    used_month: r[at.used_month],
    available: r[at.available],
    unmetered: r[at.unmetered],
    matched: r[at.matched],
    billed: r[at.billed],
    idem_request_hash: r[at.idem_request_hash],
    idem_status: r[at.idem_status],
    idem_body: r[at.idem_body],
  };
}

function statementParams(batch: Pending[], at: Date): unknown[] {
  const billCall: number[] = [];
  const billWallets: string[] = [];
  batch.forEach((p, i) => {
    for (const wallet of p.call.bill ?? []) {
      billCall.push(i + 1);
      billWallets.push(wallet);
    }
  });
  return [
    at,
    // one key for the batch's debits, one row per account under it; time-ordered (UUIDv7)
    `meter:${uuidv7(at.getTime())}`,
    batch.map((p) => p.call.digest),
    batch.map((p) => p.call.weight),
    batch.map((p) => p.call.needsCredits),
    batch.map((p) => p.call.listSize),
    billCall,
    billWallets,
    // addresses are 0x-hex: a comma-joined list per call keeps the parameter one flat array
    batch.map((p) => (p.call.lookup && p.call.lookup.length > 0 ? p.call.lookup.join(",") : null)),
    batch.map((p) => p.call.matched),
  ];
}
