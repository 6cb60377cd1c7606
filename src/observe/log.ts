// Structured logs: one JSON object per line on stdout ({time, level, msg, ...fields}), or a
// readable line for a terminal (LOG_FORMAT=pretty). LOG_LEVEL drops everything below it. Lines are
// built once and written in batches (at most one write every FLUSH_MS, or sooner once FLUSH_BYTES
// wait; at exit everything left), on Web APIs only: the entry point hands in the runtime's stdout
// writer, so the same module runs unchanged on all three runtimes (Node, Deno, Bun).

/**
 * How long lines may wait to be written, and how much. Writing stdout is a system call, and when
 * stdout is a file Node makes it synchronous; under load a write per turn of the event loop is a
 * write per request or two, where one every 50 ms carries hundreds of lines.
 */
const FLUSH_MS = 50;
const FLUSH_BYTES = 64 * 1024;

export type Level = "debug" | "info" | "warn" | "error";
export type LogLevel = Level | "silent";

/** A log call: the message, its level (info when not given) and fields to carry beside it. */
export type Log = (message: string, level?: Level, fields?: Record<string, unknown>) => void;

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** What may never reach a line: credentials in any form we issue or accept. */
const SECRET_PATTERNS: RegExp[] = [
  /\bwid_[A-Za-z0-9_]{8,}/g, // our API keys, OAuth tokens (wid_mcp_, wid_rt_) and their kin
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /\b0x[0-9a-fA-F]{130}\b/g, // 65-byte signatures (EIP-3009 authorizations, recovery challenges)
  /\beyJ[A-Za-z0-9_-]{20,}(\.[A-Za-z0-9_-]*)*/g, // base64 JSON: an x402 PAYMENT-SIGNATURE header, a JWT
];

/** Whether a text may hold any of SECRET_PATTERNS: one scan instead of four on most lines. */
const MAY_HOLD_SECRET = /wid_|bearer|basic|0x[0-9a-f]{130}|eyJ/i;

/** The text with every credential-shaped run replaced by `[redacted]`. */
export function redact(text: string): string {
  if (!MAY_HOLD_SECRET.test(text)) return text;
  let out = text;
  for (const pattern of SECRET_PATTERNS) out = out.replace(pattern, "[redacted]");
  return out;
}

/** Text JSON writes as is: no quote, backslash, control or non-ASCII character. */
const PLAIN = /^[\w .:@/+=-]*$/;

/**
 * A string as JSON: ids (UUIDs, the request ids kept) are quoted as they are, which one regular
 * expression test tells apart at a quarter of what JSON.stringify costs them.
 */
function jsonString(text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text);
}

export interface AccessFields {
  request_id: string;
  method: string;
  /** The route template (never the raw address or handle). */
  route: string;
  status: number;
  duration_ms: number;
  account_id?: string;
  units?: number;
  matches?: number;
  /** The error code of a refusal, `ok` otherwise. */
  outcome: string;
}

export interface Logger {
  log: Log;
  /** The access line of one request (level info). */
  access(fields: AccessFields): void;
  enabled(level: Level): boolean;
  /** Writes what is buffered now (also done every 50 ms while lines wait, and at exit). */
  flush(): void;
}

export interface LoggerOptions {
  level: LogLevel;
  format?: "json" | "pretty";
  /** Where lines go (the entry point passes stdout). Receives whole lines, newline-terminated. */
  write: (text: string) => void;
  now?: () => Date;
}

function prettyLine(record: Record<string, unknown>): string {
  const { time, level, msg, ...rest } = record;
  const fields = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  return `${String(time).slice(11, 23)} ${String(level).toUpperCase().padEnd(5)} ${msg}${fields.length ? `  ${fields.join(" ")}` : ""}\n`;
}

export function createLogger(options: LoggerOptions): Logger {
  // the JSON strings of the few values every access line repeats (methods, route templates,
  // outcome codes), made once; bounded, in case something unforeseen varies
  const quotedCache = new Map<string, string>();
  const quoted = (text: string) => {
    let q = quotedCache.get(text);
    if (q === undefined) {
      q = JSON.stringify(text);
      if (quotedCache.size < 1000) quotedCache.set(text, q);
    }
    return q;
  };
  const threshold = RANK[options.level];
  const write = options.write;
  // the time of a line, made once per millisecond (many access lines share one) from Date's ISO
  // text, itself made once a second (it costs about a microsecond)
  let second = -1;
  let prefix = "";
  let lastMs = -1;
  let last = "";
  const timeText = options.now
    ? () => options.now!().toISOString()
    : () => {
        const ms = Date.now();
        if (ms === lastMs) return last;
        const s = Math.floor(ms / 1000);
        if (s !== second) {
          second = s;
          prefix = new Date(s * 1000).toISOString().slice(0, 20); // 2026-11-26T17:10:05.
        }
        const frac = ms - s * 1000;
        lastMs = ms;
        last = `${prefix}${frac < 10 ? "00" : frac < 100 ? "0" : ""}${frac}Z`;
        return last;
      };
  const pretty = options.format === "pretty";
  let buffered: string[] = [];
  let bytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (buffered.length === 0) return;
    const text = buffered.join("");
    buffered = [];
    bytes = 0;
    try {
      write(text);
    } catch {
      // a closed stdout must not take the service down with it
    }
  };

  const push = (line: string) => {
    buffered.push(line);
    bytes += line.length;
    if (bytes >= FLUSH_BYTES) flush();
    else if (timer === undefined) timer = setTimeout(flush, FLUSH_MS);
  };

  const emit = (record: Record<string, unknown>) => {
    push(redact(pretty ? prettyLine(record) : `${JSON.stringify(record)}\n`));
  };

  const enabled = (level: Level) => RANK[level] >= threshold;

  return {
    log: (message, level = "info", fields) => {
      if (RANK[level] < threshold) return;
      emit({ time: timeText(), level, msg: message, ...fields });
    },
    access: (fields) => {
      if (RANK.info < threshold) return;
      // Written on every request, so built as text: only the request id comes from the caller
      // (the rest is ours: route template, codes, numbers), so only it is redacted.
      const requestId = redact(fields.request_id);
      if (pretty) {
        const given = Object.entries({ ...fields, request_id: requestId }).filter(([, value]) => value !== undefined);
        return emit({ time: timeText(), level: "info", msg: "request", ...Object.fromEntries(given) });
      }
      const spent = fields.account_id === undefined
        ? ""
        : `,"account_id":${jsonString(fields.account_id)},"units":${fields.units ?? 0},"matches":${fields.matches ?? 0}`;
      push(
        `{"time":"${timeText()}","level":"info","msg":"request","request_id":${jsonString(requestId)},` +
          `"method":${quoted(fields.method)},"route":${quoted(fields.route)},"status":${fields.status},` +
          `"duration_ms":${fields.duration_ms}${spent},"outcome":${quoted(fields.outcome)}}\n`,
      );
    },
    enabled,
    flush,
  };
}

/** Request ids we keep: an incoming X-Request-Id of safe characters, else a traceparent's trace id. */
export function incomingRequestId(headers: Headers): string | undefined {
  const given = headers.get("X-Request-Id");
  if (given && /^[A-Za-z0-9._:@/-]{1,128}$/.test(given)) return given;
  const traceparent = headers.get("traceparent");
  const trace = traceparent ? /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent.trim()) : null;
  if (trace && !/^0+$/.test(trace[1])) return trace[1];
  return undefined;
}
