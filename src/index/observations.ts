// Index observations: one line of the import format (NDJSON, one observation a line), parsed and
// checked field by field. Import files and a job's live answers both arrive as these.

export const LINK_KINDS = ["twitter", "farcaster", "ens", "lens", "github", "agent"] as const;
export type LinkKind = (typeof LINK_KINDS)[number];

export const REACHABILITY_VALUES = ["live", "suspended", "deactivated", "unchecked"] as const;
export type Reachability = (typeof REACHABILITY_VALUES)[number];

/** The onchain-agent descriptor, stored as `links.detail`; each field omitted when unknown. */
export interface AgentDetail {
  is_agent?: boolean;
  name?: string;
  framework?: string;
  type?: string;
  token_symbol?: string;
  verified?: boolean;
}

interface WalletLine {
  wallet: string;
  route: string;
  /** Absent when the line carried none: it is then observed "now" but never moves an existing row. */
  observedAt?: Date;
}

export type IdentityObservation =
  | (WalletLine & { kind: "twitter"; handle: string; selfDeclared: boolean })
  | (WalletLine & { kind: "farcaster"; fid: number; username: string; followers?: number })
  | (WalletLine & { kind: "ens"; name: string })
  | (WalletLine & { kind: "lens"; handle: string })
  | (WalletLine & { kind: "github"; username: string })
  | (WalletLine & { kind: "agent"; agent: AgentDetail });

export type Observation =
  | IdentityObservation
  | (WalletLine & { kind: "empty" })
  | { kind: "reachability"; handle: string; reachability: Reachability; checkedAt: Date };

export type ParseResult = { ok: true; observation: Observation } | { ok: false; error: string };

// a little clock skew between the exporting machine and this one is not an error
const FUTURE_TOLERANCE_MS = 5 * 60 * 1000;

const WALLET_FIELDS = ["wallet", "kind", "route", "observed_at"];
const FIELDS: Record<Observation["kind"], string[]> = {
  twitter: [...WALLET_FIELDS, "handle", "self_declared"],
  farcaster: [...WALLET_FIELDS, "fid", "username", "followers"],
  ens: [...WALLET_FIELDS, "name"],
  lens: [...WALLET_FIELDS, "handle"],
  github: [...WALLET_FIELDS, "username"],
  agent: [...WALLET_FIELDS, "is_agent", "name", "framework", "type", "token_symbol", "verified"],
  empty: WALLET_FIELDS,
  // a reachability check belongs to a handle, not to a wallet; `route` is tolerated and ignored
  reachability: ["kind", "handle", "reachability", "checked_at", "route"],
};
const KINDS = Object.keys(FIELDS);

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const ROUTE = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const TWITTER_HANDLE = /^[a-z0-9_]{1,15}$/;
const FARCASTER_USERNAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const ENS_NAME = /^[^\s.]+(\.[^\s.]+)+$/;
const LENS_HANDLE = /^[a-z0-9][a-z0-9._/-]{0,99}$/;
const GITHUB_USERNAME = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,38}$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

class LineError extends Error {}

function fail(reason: string): never {
  throw new LineError(reason);
}

type Fields = Record<string, unknown>;

/** An optional field: absent and null both mean "not given". */
function present(fields: Fields, name: string): boolean {
  return fields[name] !== undefined && fields[name] !== null;
}

function text(fields: Fields, name: string): string {
  const value = fields[name];
  if (typeof value !== "string" || value.trim() === "") fail(`${name} must be a non-empty string`);
  return value.trim();
}

function flag(fields: Fields, name: string): boolean {
  if (typeof fields[name] !== "boolean") fail(`${name} must be true or false`);
  return fields[name] as boolean;
}

function integer(fields: Fields, name: string, min: number, max: number): number {
  const value = fields[name];
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    fail(`${name} must be a whole number from ${min} to ${max}`);
  }
  return value;
}

function matching(value: string, pattern: RegExp, name: string, shape: string): string {
  if (!pattern.test(value)) fail(`${name} ${JSON.stringify(value)} is not ${shape}`);
  return value;
}

/** The last timestamp read and its time: a job's chunk gives every observation the same one. */
const lastTimestamp: { value?: string; time: number } = { time: NaN };

function timestamp(fields: Fields, name: string, now?: Date): Date {
  const value = fields[name];
  let time = lastTimestamp.time;
  if (typeof value !== "string" || value !== lastTimestamp.value) {
    time = parseTimestamp(value, name);
    lastTimestamp.value = value as string;
    lastTimestamp.time = time;
  }
  if (now && time > now.getTime() + FUTURE_TOLERANCE_MS) fail(`${name} ${value} is in the future`);
  return new Date(time);
}

function parseTimestamp(value: unknown, name: string): number {
  const match = typeof value === "string" ? TIMESTAMP.exec(value) : null;
  if (!match) fail(`${name} must be an ISO timestamp with a time zone, e.g. 2025-01-31T12:00:00Z`);
  const [, year, month, day, hour, minute, second = "0", offsetHour = "0", offsetMinute = "0"] = match;
  // Date would roll 2025-02-30 over into March instead of refusing it
  const calendar = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  const valid =
    calendar.getUTCMonth() === Number(month) - 1 &&
    calendar.getUTCDate() === Number(day) &&
    Number(hour) < 24 &&
    Number(minute) < 60 &&
    Number(second) < 60 &&
    Number(offsetHour) < 24 &&
    Number(offsetMinute) < 60;
  const date = new Date(value as string);
  if (!valid || Number.isNaN(date.getTime())) fail(`${name} ${JSON.stringify(value)} is not a valid date and time`);
  return date.getTime();
}

function parseFields(fields: Fields, now?: Date): Observation {
  const kind = fields.kind;
  if (typeof kind !== "string" || !KINDS.includes(kind)) fail(`kind must be one of ${KINDS.join(", ")}`);
  const allowed = FIELDS[kind as Observation["kind"]];
  const unknown = Object.keys(fields).find((name) => !allowed.includes(name));
  if (unknown === "wallet") fail("a reachability line has no wallet: reachability belongs to the handle");
  if (unknown !== undefined) fail(`unknown field ${JSON.stringify(unknown)} for kind ${kind}`);

  if (kind === "reachability") {
    const handle = twitterHandle(fields);
    const reachability = fields.reachability;
    if (!REACHABILITY_VALUES.includes(reachability as Reachability)) {
      fail(`reachability must be one of ${REACHABILITY_VALUES.join(", ")}`);
    }
    if (present(fields, "route")) matching(text(fields, "route"), ROUTE, "route", "a route name ([a-z0-9._-])");
    return { kind, handle, reachability: reachability as Reachability, checkedAt: timestamp(fields, "checked_at", now) };
  }

  const line: WalletLine = {
    wallet: matching(text(fields, "wallet"), ADDRESS, "wallet", "an address (0x and 40 hex digits)").toLowerCase(),
    route: matching(text(fields, "route"), ROUTE, "route", "a route name ([a-z0-9._-], lowercase)"),
  };
  if (present(fields, "observed_at")) line.observedAt = timestamp(fields, "observed_at", now);

  // The kind's fields are assigned onto `line` rather than spread with it into a new object: the
  // spread of an object that gained a property cost about 8 us a line (a job's chunk checks a thousand).
  switch (kind) {
    case "twitter":
      return Object.assign(line, {
        kind,
        handle: twitterHandle(fields),
        selfDeclared: present(fields, "self_declared") ? flag(fields, "self_declared") : false,
      });
    case "farcaster": {
      const observation = Object.assign(line, {
        kind,
        fid: integer(fields, "fid", 1, Number.MAX_SAFE_INTEGER),
        username: matching(text(fields, "username").toLowerCase(), FARCASTER_USERNAME, "username", "a farcaster username"),
      }) as Extract<Observation, { kind: "farcaster" }>;
      if (present(fields, "followers")) observation.followers = integer(fields, "followers", 0, 2_147_483_647);
      return observation;
    }
    case "ens":
      return Object.assign(line, { kind, name: matching(text(fields, "name").toLowerCase(), ENS_NAME, "name", "an ENS name") });
    case "lens":
      return Object.assign(line, { kind, handle: matching(text(fields, "handle").toLowerCase(), LENS_HANDLE, "handle", "a lens handle") });
    case "github":
      return Object.assign(line, {
        kind,
        username: matching(text(fields, "username").toLowerCase(), GITHUB_USERNAME, "username", "a github username"),
      });
    case "agent":
      return Object.assign(line, { kind, agent: agentDetail(fields) });
    default:
      return Object.assign(line, { kind: "empty" as const });
  }
}

function twitterHandle(fields: Fields): string {
  const handle = text(fields, "handle").replace(/^@/, "").toLowerCase();
  return matching(handle, TWITTER_HANDLE, "handle", "a twitter handle (1 to 15 letters, digits or underscores)");
}

function agentDetail(fields: Fields): AgentDetail {
  const agent: AgentDetail = {};
  for (const name of ["is_agent", "verified"] as const) {
    if (present(fields, name)) agent[name] = flag(fields, name);
  }
  for (const name of ["name", "framework", "type", "token_symbol"] as const) {
    if (present(fields, name)) agent[name] = text(fields, name);
  }
  if (Object.keys(agent).length === 0) {
    fail("an agent line needs at least one of is_agent, name, framework, type, token_symbol, verified");
  }
  return agent;
}

/**
 * Parses one NDJSON line. `now`, when given, refuses timestamps in the future.
 * The error is one line: "line N: <reason>".
 */
export function parseObservation(line: string, lineNumber: number, options: { now?: Date } = {}): ParseResult {
  let fields: unknown;
  try {
    fields = JSON.parse(line);
  } catch {
    return { ok: false, error: `line ${lineNumber}: not valid JSON` };
  }
  return parseObservationFields(fields, lineNumber, options);
}

/**
 * One observation already read into an object (a live source's answer), checked exactly as a
 * line of a file is, without the round trip through JSON text.
 */
export function parseObservationFields(fields: unknown, lineNumber: number, options: { now?: Date } = {}): ParseResult {
  if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
    return { ok: false, error: `line ${lineNumber}: not a JSON object` };
  }
  try {
    return { ok: true, observation: parseFields(fields as Fields, options.now) };
  } catch (error) {
    if (error instanceof LineError) return { ok: false, error: `line ${lineNumber}: ${error.message}` };
    throw error;
  }
}
