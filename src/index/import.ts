// Index import: NDJSON observation lines (docs/api.md, "Import format"), all validated before
// any is written, then upserted in batches inside one transaction: a file lands whole or not at all.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { changedWallets as compareWatched, type ChangeCause } from "./changes.ts";
import { parseObservation, type IdentityObservation, type LinkKind, type Observation, type Reachability } from "./observations.ts";

/** A line that does not follow the import format; the message is "line N: <reason>". */
export class InvalidLineError extends Error {}

export interface ImportCounts {
  /** non-blank lines read */
  lines: number;
  wallets_added: number;
  /** identity rows (links) created */
  observations_added: number;
  /** identity lines that changed an existing row: a newer observed_at, a changed agent
   *  descriptor or self_declared flag, or a farcaster account's username or followers */
  observations_updated: number;
  /** handles whose reachability was recorded or replaced by a newer check */
  reachability_updated: number;
  /** lines that changed nothing (already known, or repeated within the file) */
  unchanged: number;
}

const BATCH_SIZE = 5000;

/** One row of `links`, as links_upsert_many takes it. */
interface LinkRow {
  wallet: string;
  kind: LinkKind;
  value: string;
  route: string;
  fid: number | null;
  selfDeclared: boolean;
  detail: string | null;
}

function linkRow(observation: IdentityObservation): LinkRow {
  // one literal of one shape (no spreads): a job's chunk builds a thousand of these
  const row = (value: string, fid: number | null, selfDeclared: boolean, detail: string | null): LinkRow => ({
    wallet: observation.wallet,
    kind: observation.kind,
    value,
    route: observation.route,
    fid,
    selfDeclared,
    detail,
  });
  switch (observation.kind) {
    case "twitter":
      return row(observation.handle, null, observation.selfDeclared, null);
    case "farcaster":
      return row(String(observation.fid), observation.fid, false, null);
    case "ens":
      return row(observation.name, null, false, null);
    case "lens":
      return row(observation.handle, null, false, null);
    case "github":
      return row(observation.username, null, false, null);
    case "agent":
      return row("agent", null, false, JSON.stringify(observation.agent));
  }
}

/** The line that decides a row, when several lines of one file land on the same key. */
interface Winner<T> {
  row: T;
  at: Date;
  explicit: boolean;
  line: number;
}

// An explicit time beats the implicit "now"; between two of a kind the newer wins, and on a
// tie the later line (so a file can correct itself).
function beats(candidate: { at: Date; explicit: boolean }, current: { at: Date; explicit: boolean } | undefined): boolean {
  if (!current) return true;
  if (candidate.explicit !== current.explicit) return candidate.explicit;
  return candidate.at.getTime() >= current.at.getTime();
}

interface WalletTouch {
  /** some line of this wallet carried no observed_at */
  implicit: boolean;
  /** the newest observed_at any line of this wallet carried */
  explicitAt?: Date;
  /** an `empty` line: when the wallet row changes, that line is what changed it */
  hasEmptyLine: boolean;
  hasLinks: boolean;
}

/** Observations of one file, folded onto the keys of the tables they write. */
interface Plan {
  lines: number;
  wallets: Map<string, WalletTouch>;
  links: Map<string, Winner<LinkRow>>;
  farcaster: Map<number, Winner<{ fid: number; username: string; followers: number | null }>>;
  reachability: Map<string, Winner<{ handle: string; reachability: Reachability }>>;
}

function emptyPlan(): Plan {
  return { lines: 0, wallets: new Map(), links: new Map(), farcaster: new Map(), reachability: new Map() };
}

function addToPlan(plan: Plan, observation: Observation, line: number, now: Date): void {
  plan.lines++;
  if (observation.kind === "reachability") {
    const candidate = { row: observation, at: observation.checkedAt, explicit: true, line };
    if (beats(candidate, plan.reachability.get(observation.handle))) plan.reachability.set(observation.handle, candidate);
    return;
  }
  const explicit = observation.observedAt !== undefined;
  const at = observation.observedAt ?? now;
  let wallet = plan.wallets.get(observation.wallet);
  if (!wallet) {
    wallet = { implicit: false, hasEmptyLine: false, hasLinks: false };
    plan.wallets.set(observation.wallet, wallet);
  }
  if (!explicit) wallet.implicit = true;
  else if (!wallet.explicitAt || at > wallet.explicitAt) wallet.explicitAt = at;

  if (observation.kind === "empty") {
    wallet.hasEmptyLine = true;
    return;
  }
  wallet.hasLinks = true;
  const row = linkRow(observation);
  const key = linkKey(row);
  const candidate = { row, at, explicit, line };
  if (beats(candidate, plan.links.get(key))) plan.links.set(key, candidate);
  if (observation.kind === "farcaster") {
    const account = { fid: observation.fid, username: observation.username, followers: observation.followers ?? null };
    // an account is one row whoever verified it: the newest observation decides, explicit or not
    const current = plan.farcaster.get(observation.fid);
    if (!current || at.getTime() >= current.at.getTime()) {
      plan.farcaster.set(observation.fid, { row: account, at, explicit, line });
    }
  }
}

function linkKey(row: { wallet: string; kind: string; value: string; route: string }): string {
  return `${row.wallet}|${row.kind}|${row.value}|${row.route}`;
}

function* chunks<T>(items: T[]): Generator<T[]> {
  for (let i = 0; i < items.length; i += BATCH_SIZE) yield items.slice(i, i + BATCH_SIZE);
}

/**
 * Validates every line, then writes them all in one transaction. Throws InvalidLineError("line N: ...")
 * on the first bad line, having written nothing. Blank lines are skipped.
 */
export async function importObservations(
  db: Db,
  lines: Iterable<string> | AsyncIterable<string>,
  options: { now: Date; cause?: ChangeCause },
): Promise<ImportCounts> {
  const plan = emptyPlan();
  let lineNumber = 0;
  for await (const line of lines) {
    lineNumber++;
    if (line.trim() === "") continue;
    const parsed = parseObservation(line, lineNumber, { now: options.now });
    if (!parsed.ok) throw new InvalidLineError(parsed.error);
    addToPlan(plan, parsed.observation, lineNumber, options.now);
  }
  return await db.transaction((tx) => writePlan(tx, plan, options.now, options.cause ?? "import"), { bulk: true });
}

/**
 * Writes observations already parsed (a job's live answers, a hub's messages) inside the caller's
 * transaction, through the same plan and upserts as an import file; `cause` names the writer in
 * the wallet.changed events of the watched wallets it changes.
 */
export async function writeObservations(tx: Db, observations: Observation[], now: Date, cause: ChangeCause): Promise<ImportCounts> {
  const plan = emptyPlan();
  observations.forEach((observation, i) => addToPlan(plan, observation, i + 1, now));
  return await writePlan(tx, plan, now, cause);
}

/**
 * Runs statements on the transaction's one connection in order, up to `depth` of them sent before
 * the first answers (pipelined), so that a small plan costs a round trip per step, not per statement,
 * while a large import never holds more than `depth` batches of parameters at once.
 */
async function pipelined<T>(statements: Array<() => Promise<T>>, depth = 4): Promise<T[]> {
  const results: T[] = new Array(statements.length);
  const inFlight = new Set<Promise<void>>();
  let failure: { err: unknown } | undefined;
  for (let i = 0; i < statements.length && !failure; i++) {
    const running: Promise<void> = statements[i]().then(
      (value) => void (results[i] = value),
      (err: unknown) => void (failure ??= { err }),
    );
    inFlight.add(running);
    void running.finally(() => inFlight.delete(running));
    if (inFlight.size >= depth) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  if (failure) throw failure.err;
  return results;
}

async function writePlan(tx: Db, plan: Plan, now: Date, cause: ChangeCause): Promise<ImportCounts> {
  // Which lines reached the database: the winner of each key whose row was written.
  const changedIdentityLines = new Set<number>();
  const addedIdentityLines = new Set<number>();
  let changedEmptyLines = 0;
  let walletsAdded = 0;
  let reachabilityUpdated = 0;

  // Wallets first (links refer to them). The implicit pass only ever inserts; the explicit pass
  // may then move checked_at forward, so a new wallet seen both ways gets the later of the two.
  const touched = [...plan.wallets.entries()];
  const changedWallets = new Set<string>();
  // A wallet the plan creates has no links yet, so its last_updated is the newest of the plan's
  // links for it: written with the row, rather than by a second UPDATE of every new wallet.
  const newestLink = new Map<string, Date>();
  for (const { row, at } of plan.links.values()) {
    const newest = newestLink.get(row.wallet);
    if (!newest || at > newest) newestLink.set(row.wallet, at);
  }
  const insertedWallets = new Set<string>();
  const passes = [
    { explicit: false, wallets: touched.filter(([, w]) => w.implicit).map(([address]) => ({ address, at: now })) },
    {
      explicit: true,
      wallets: touched.flatMap(([address, w]) => (w.explicitAt ? [{ address, at: w.explicitAt }] : [])),
    },
  ];
  const walletRows = await pipelined(
    passes.flatMap((pass) =>
      [...chunks(pass.wallets)].map(
        (batch) => () =>
          tx.query<{ inserted: boolean; address: string }>(sql("wallets_upsert_many"), [
            batch.map((w) => w.address),
            batch.map((w) => w.at),
            pass.explicit,
            batch.map((w) => newestLink.get(w.address) ?? null),
          ]),
      ),
    ),
  );
  for (const row of walletRows.flat()) {
    if (row.inserted) {
      walletsAdded++;
      insertedWallets.add(row.address);
    }
    changedWallets.add(row.address);
  }
  for (const [address, wallet] of touched) {
    if (wallet.hasEmptyLine && changedWallets.has(address)) changedEmptyLines++;
  }

  // Then links, farcaster accounts, reachability and the existing wallets' last_updated, in that
  // order, pipelined: each statement's answer is only counted.
  const statements: Array<() => Promise<void>> = [];
  const links = [...plan.links.values()];
  for (const explicit of [false, true]) {
    for (const batch of chunks(links.filter((l) => l.explicit === explicit))) {
      statements.push(async () => {
        const rows = await tx.query<{ inserted: boolean; wallet: string; kind: LinkKind; value: string; route: string }>(
          sql("links_upsert_many"),
          [
            batch.map((l) => l.row.wallet),
            batch.map((l) => l.row.kind),
            batch.map((l) => l.row.value),
            batch.map((l) => l.row.route),
            batch.map((l) => l.row.fid),
            batch.map((l) => l.row.selfDeclared),
            batch.map((l) => l.row.detail),
            batch.map((l) => l.at),
            explicit,
          ],
        );
        const lineOf = new Map(batch.map((l) => [linkKey(l.row), l.line]));
        for (const row of rows) {
          const line = lineOf.get(linkKey(row))!;
          changedIdentityLines.add(line);
          if (row.inserted) addedIdentityLines.add(line);
        }
      });
    }
  }

  for (const batch of chunks([...plan.farcaster.values()])) {
    statements.push(async () => {
      const rows = await tx.query<{ fid: string }>(sql("farcaster_accounts_upsert_many"), [
        batch.map((f) => f.row.fid),
        batch.map((f) => f.row.username),
        batch.map((f) => f.row.followers),
        batch.map((f) => f.at),
      ]);
      const lineOf = new Map(batch.map((f) => [String(f.row.fid), f.line]));
      for (const row of rows) changedIdentityLines.add(lineOf.get(row.fid)!);
    });
  }

  for (const batch of chunks([...plan.reachability.values()])) {
    statements.push(async () => {
      const rows = await tx.query(sql("twitter_reachability_upsert_many"), [
        batch.map((r) => r.row.handle),
        batch.map((r) => r.row.reachability),
        batch.map((r) => r.at),
      ]);
      reachabilityUpdated += rows.length;
    });
  }

  // the wallets that existed before: their newest link may be one this plan did not touch
  const walletsWithLinks = touched.filter(([address, w]) => w.hasLinks && !insertedWallets.has(address)).map(([address]) => address);
  for (const batch of chunks(walletsWithLinks)) {
    statements.push(async () => void (await tx.query(sql("wallets_refresh_last_updated"), [batch])));
  }
  await pipelined(statements);
  // the watched wallets these statements changed: one wallet.changed event each (src/index/changes.ts)
  await compareWatched(tx, cause, now);

  return {
    lines: plan.lines,
    wallets_added: walletsAdded,
    observations_added: addedIdentityLines.size,
    observations_updated: changedIdentityLines.size - addedIdentityLines.size,
    reachability_updated: reachabilityUpdated,
    unchanged: plan.lines - changedIdentityLines.size - changedEmptyLines - reachabilityUpdated,
  };
}
