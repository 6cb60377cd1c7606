// Builds wallet records from the identity rows of wallets_select_records: which twitter handle
// shows, what `verified`, `self_declared`, `also` and reachability say, the evidence classes
// and the quality score.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { columnsAt } from "../db/columns.ts";
import type { AgentDetail } from "./observations.ts";

export const EVIDENCE_CLASSES = ["onchain", "farcaster", "attested-social", "manual", "aggregated"] as const;
const ATTESTED = new Set(["onchain", "farcaster", "attested-social", "manual"]);

export interface IdentityRow {
  address: string;
  last_updated: Date | null;
  checked_at: Date;
  kind: string | null;
  value: string | null;
  route: string | null;
  class: string | null;
  self_declared: boolean | null;
  detail: Record<string, unknown> | null;
  observed_at: Date | null;
  fid: number | null;
  fc_username: string | null;
  fc_followers: number | null;
  reachability: string | null;
  reachability_checked_at: Date | null;
}

/** Where each column of an identity row sits in a statement's array rows (Db.queryArrays). */
export type IdentityColumns = { readonly [K in keyof IdentityRow]: number };

const IDENTITY_COLUMNS: ReadonlyArray<keyof IdentityRow> = [
  "address", "last_updated", "checked_at", "kind", "value", "route", "class", "self_declared", "detail",
  "observed_at", "fid", "fc_username", "fc_followers", "reachability", "reachability_checked_at",
];

/** The identity columns among a statement's `names`; throws when one is missing. */
export function identityColumns(names: readonly string[], statement: string): IdentityColumns {
  return columnsAt(names, IDENTITY_COLUMNS, statement);
}

/** An identity row from an array row: one object literal, so every row has the same shape. */
export function identityRowAt(r: readonly unknown[], at: IdentityColumns): IdentityRow {
  return {
    address: r[at.address] as string,
    last_updated: r[at.last_updated] as Date | null,
    checked_at: r[at.checked_at] as Date,
    kind: r[at.kind] as string | null,
    value: r[at.value] as string | null,
    route: r[at.route] as string | null,
    class: r[at.class] as string | null,
    self_declared: r[at.self_declared] as boolean | null,
    detail: r[at.detail] as Record<string, unknown> | null,
    observed_at: r[at.observed_at] as Date | null,
    fid: r[at.fid] as number | null,
    fc_username: r[at.fc_username] as string | null,
    fc_followers: r[at.fc_followers] as number | null,
    reachability: r[at.reachability] as string | null,
    reachability_checked_at: r[at.reachability_checked_at] as Date | null,
  };
}

export interface TwitterView {
  handle: string;
  url: string;
  verified: boolean;
  selfDeclared: boolean;
  reachability?: { value: string; reachable: boolean; checkedAt: Date };
  also?: { handle: string; url: string; source: string };
}

export interface FarcasterView {
  username: string;
  url: string;
  followers?: number;
  fid: number;
  verified: boolean;
}

export type AgentView = AgentDetail;

export interface WalletView {
  wallet: string;
  found: boolean;
  lastUpdated: Date | null;
  checkedAt: Date;
  stale: boolean;
  ensName?: string;
  twitter?: TwitterView;
  farcaster?: FarcasterView;
  lens?: string;
  github?: string;
  agent?: AgentView;
  sources: string[];
  quality: { score: number; lastVerified: Date | null };
}

export async function selectIdentityRows(db: Db, addresses: string[]): Promise<IdentityRow[]> {
  if (addresses.length === 0) return [];
  return await db.query<IdentityRow & Record<string, unknown>>(sql("wallets_select_records"), [addresses]);
}

export interface ViewOptions {
  now: Date;
  staleAfterDays: number;
  /**
   * The identity a reverse lookup asked for: its twitter handle or farcaster username is the one
   * the record shows, whatever would otherwise be chosen (lowercased).
   */
  prefer?: { twitter?: string; farcaster?: string };
}

/** Views of the wallets the index has seen, keyed by address; a never-seen wallet has no entry. */
export function buildViews(rows: IdentityRow[], options: ViewOptions): Map<string, WalletView> {
  const grouped = new Map<string, IdentityRow[]>();
  for (const row of rows) {
    const list = grouped.get(row.address);
    if (list) list.push(row);
    else grouped.set(row.address, [row]);
  }
  const views = new Map<string, WalletView>();
  for (const [address, list] of grouped) views.set(address, buildView(list, options));
  return views;
}

interface Candidate {
  kind: string;
  value: string;
  /** Its evidence classes, each once. */
  classes: string[];
  /** Whether any owner-attested class backs it. */
  attested: boolean;
  routes: IdentityRow[];
  newest: number;
}

/**
 * A wallet's rows read once: its candidates (by kind and value, in first-seen order), its
 * evidence classes, its newest attested observation and its first agent row with a detail.
 * Flat arrays searched in place, without callbacks, rather than Maps and Sets: a wallet has a
 * handful of rows, and a reverse page builds 100 wallets' records.
 */
interface WalletRows {
  rows: IdentityRow[];
  candidates: Candidate[];
  /** The evidence classes of its rows, each once. */
  classes: string[];
  /** The newest observed_at (ms) of a row with an owner-attested class, or null. */
  attestedNewest: number | null;
  agentRow: IdentityRow | undefined;
}

function readWalletRows(rows: IdentityRow[]): WalletRows {
  const all: Candidate[] = [];
  const classes: string[] = [];
  let attestedNewest: number | null = null;
  let agentRow: IdentityRow | undefined;
  for (const row of rows) {
    if (row.class !== null) {
      if (!classes.includes(row.class)) classes.push(row.class);
      if (ATTESTED.has(row.class) && row.observed_at) {
        const t = row.observed_at.getTime();
        if (attestedNewest === null || t > attestedNewest) attestedNewest = t;
      }
    }
    if (agentRow === undefined && row.kind === "agent" && row.detail) agentRow = row;
    if (row.kind === null || row.value === null) continue;
    let c: Candidate | undefined;
    for (const x of all) {
      if (x.kind === row.kind && x.value === row.value) {
        c = x;
        break;
      }
    }
    if (!c) all.push((c = { kind: row.kind, value: row.value, classes: [], attested: false, routes: [], newest: 0 }));
    if (row.class) {
      if (!c.classes.includes(row.class)) c.classes.push(row.class);
      if (ATTESTED.has(row.class)) c.attested = true;
    }
    c.routes.push(row);
    c.newest = Math.max(c.newest, row.observed_at?.getTime() ?? 0);
  }
  return { rows, candidates: all, classes, attestedNewest, agentRow };
}

/** The wallet's candidates of a kind, in first-seen order. */
function candidates(wallet: WalletRows, kind: string): Candidate[] {
  const out: Candidate[] = [];
  for (const c of wallet.candidates) if (c.kind === kind) out.push(c);
  return out;
}

function isAttested(c: Candidate): boolean {
  return c.attested;
}

/** Attested first, then the newest observation, then alphabetical, so the choice is stable. */
function byEvidence(a: Candidate, b: Candidate): number {
  return Number(isAttested(b)) - Number(isAttested(a)) || b.newest - a.newest || a.value.localeCompare(b.value);
}

/** The first candidate by evidence (the first seen among equals, as a stable sort would give). */
function pickName(wallet: WalletRows, kind: string): string | undefined {
  let best: Candidate | undefined;
  for (const c of wallet.candidates) if (c.kind === kind && (!best || byEvidence(c, best) < 0)) best = c;
  return best?.value;
}

const DEAD = new Set(["suspended", "deactivated"]);

/** A name reduced to its letters and digits, to compare an agent's name with a handle. */
function simple(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]/g, "");
}

function twitterOf(wallet: WalletRows, prefer?: string): TwitterView | undefined {
  const handles = candidates(wallet, "twitter").map((c) => {
    const reach = c.routes.find((r) => r.reachability !== null);
    return {
      c,
      reachability: reach?.reachability ?? "unchecked",
      checkedAt: reach?.reachability_checked_at ?? null,
      // resting only on text the owner typed into their own record
      selfDeclared: c.routes.length > 0 && c.routes.every((r) => r.self_declared === true),
      // owner-attested evidence that is more than the owner's own typing
      verified: c.routes.some((r) => r.class !== null && ATTESTED.has(r.class) && r.self_declared !== true),
    };
  });
  if (handles.length === 0) return undefined;
  // a handle that no longer reaches anyone gives way to a working one
  handles.sort(
    (a, b) =>
      Number(b.c.value === prefer) - Number(a.c.value === prefer) ||
      Number(DEAD.has(a.reachability)) - Number(DEAD.has(b.reachability)) ||
      Number(b.verified) - Number(a.verified) ||
      byEvidence(a.c, b.c),
  );
  const primary = handles[0];
  const view: TwitterView = {
    handle: primary.c.value,
    url: `https://x.com/${primary.c.value}`,
    verified: primary.verified,
    selfDeclared: primary.selfDeclared,
  };
  if (primary.reachability !== "unchecked" && primary.checkedAt) {
    view.reachability = {
      value: primary.reachability,
      reachable: primary.reachability === "live",
      checkedAt: primary.checkedAt,
    };
  }
  const second = handles.find((h, i) => i > 0 && isAttested(h.c) && h.reachability === "live");
  if (second && primary.reachability === "live") {
    const source = EVIDENCE_CLASSES.find((k) => ATTESTED.has(k) && second.c.classes.includes(k))!;
    view.also = { handle: second.c.value, url: `https://x.com/${second.c.value}`, source };
  }
  return view;
}

function farcasterOf(wallet: WalletRows, prefer?: string): FarcasterView | undefined {
  const accounts = candidates(wallet, "farcaster")
    .map((c) => ({ c, row: c.routes[0] }))
    .filter(({ row }) => row.fc_username !== null && row.fid !== null)
    .sort(
      (a, b) =>
        Number(b.row.fc_username!.toLowerCase() === prefer) - Number(a.row.fc_username!.toLowerCase() === prefer) ||
        Number(isAttested(b.c)) - Number(isAttested(a.c)) ||
        (b.row.fc_followers ?? -1) - (a.row.fc_followers ?? -1) ||
        a.row.fid! - b.row.fid!,
    );
  if (accounts.length === 0) return undefined;
  const { c, row } = accounts[0];
  const view: FarcasterView = {
    username: row.fc_username!,
    url: `https://farcaster.xyz/${row.fc_username}`,
    fid: row.fid!,
    verified: isAttested(c),
  };
  if (row.fc_followers !== null) view.followers = row.fc_followers;
  return view;
}

const AGENT_FIELDS = ["is_agent", "name", "framework", "type", "token_symbol", "verified"] as const;

function agentOf(wallet: WalletRows, twitter?: TwitterView, farcaster?: FarcasterView): AgentView | undefined {
  const row = wallet.agentRow;
  if (!row) return undefined;
  const detail = row.detail!;
  const agent: Record<string, unknown> = {};
  for (const field of AGENT_FIELDS) if (detail[field] !== undefined && detail[field] !== null) agent[field] = detail[field];
  // the owner attested a human identity that is not the agent's own: decline to say
  const agentName = typeof agent.name === "string" ? simple(agent.name) : undefined;
  const attestedOthers = [
    twitter?.verified ? twitter.handle : undefined,
    farcaster?.verified ? farcaster.username : undefined,
  ].filter((n): n is string => n !== undefined);
  if (attestedOthers.some((n) => simple(n) !== agentName)) return undefined;
  return agent as AgentView;
}

/**
 * quality.score, 0 to 100 (documented in docs/api.md):
 * evidence 60 when any owner-attested class backs the record, 30 for aggregated alone, 10 otherwise;
 * +5 per identity kind shown (twitter, farcaster, ens, lens, github); +15 when the twitter or
 * farcaster account is verified; -30 when the twitter handle shown no longer reaches an account.
 */
function qualityOf(view: Omit<WalletView, "quality">, wallet: WalletRows): WalletView["quality"] {
  const attested = view.sources.some((k) => ATTESTED.has(k));
  let score = attested ? 60 : view.sources.includes("aggregated") ? 30 : 10;
  for (const shown of [view.twitter, view.farcaster, view.ensName, view.lens, view.github]) if (shown !== undefined) score += 5;
  if (view.twitter?.verified || view.farcaster?.verified) score += 15;
  if (view.twitter?.reachability && !view.twitter.reachability.reachable) score -= 30;
  const lastVerified = wallet.attestedNewest !== null ? new Date(wallet.attestedNewest) : view.lastUpdated;
  return { score: Math.max(0, Math.min(100, score)), lastVerified };
}

function buildView(rows: IdentityRow[], options: ViewOptions): WalletView {
  const first = rows[0];
  const wallet = readWalletRows(rows);
  const twitter = twitterOf(wallet, options.prefer?.twitter);
  const farcaster = farcasterOf(wallet, options.prefer?.farcaster);
  const view: WalletView = {
    wallet: first.address,
    lastUpdated: first.last_updated,
    checkedAt: first.checked_at,
    stale: false,
    ensName: pickName(wallet, "ens"),
    twitter,
    farcaster,
    lens: pickName(wallet, "lens"),
    github: pickName(wallet, "github"),
    agent: agentOf(wallet, twitter, farcaster),
    sources: EVIDENCE_CLASSES.filter((k) => wallet.classes.includes(k)),
    found: false,
    quality: { score: 0, lastVerified: null },
  };
  view.found =
    view.twitter !== undefined ||
    view.farcaster !== undefined ||
    view.ensName !== undefined ||
    view.lens !== undefined ||
    view.github !== undefined ||
    view.agent !== undefined;
  if (view.found && view.lastUpdated) {
    view.stale = options.now.getTime() - view.lastUpdated.getTime() > options.staleAfterDays * 86_400_000;
  }
  view.quality = qualityOf(view, wallet);
  return view;
}
