// The one interface every live source implements, and the error that says whether to retry.

/** Job stages in the order a chunk goes through them; live sources run in `live` or `onchain`. */
export const STAGES = ["index", "cache", "live", "onchain"] as const;
export type Stage = (typeof STAGES)[number];
export type LiveStage = Extract<Stage, "live" | "onchain">;

/** Fields of one observation in the import format (docs/api.md), without `wallet` and `observed_at`. */
export type ObservationFields = Record<string, unknown> & { kind: string; route: string };

export interface LiveSource {
  /** Key of the source's answers in live_answers, and its name in logs. */
  readonly name: string;
  readonly stage: LiveStage;
  /** Most addresses one resolve() call takes. */
  readonly batchSize: number;
  /**
   * What the upstream knows about each address; an address with nothing is absent from the map.
   * Throws UpstreamError when the upstream cannot answer.
   */
  resolve(addresses: string[]): Promise<Map<string, ObservationFields[]>>;
}

export class UpstreamError extends Error {
  /** Worth trying again: the network, a timeout, a 5xx or a 429. */
  readonly retryable: boolean;
  /** What the upstream asked for (Retry-After), when it did. */
  readonly retryAfterMs?: number;

  constructor(message: string, options: { retryable: boolean; retryAfterMs?: number }) {
    super(message);
    this.retryable = options.retryable;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** An UpstreamError from an HTTP status that is not a success. */
export function statusError(source: string, res: Response): UpstreamError {
  const retryable = res.status === 429 || res.status >= 500;
  const seconds = Number(res.headers.get("retry-after"));
  return new UpstreamError(`${source} answered HTTP ${res.status}`, {
    retryable,
    retryAfterMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined,
  });
}

export interface RetryOptions {
  /** Tries in all, the first included. */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs `fn`, retrying retryable UpstreamErrors with exponential backoff (and full jitter),
 * never sooner than a Retry-After the upstream sent, never longer than maxDelayMs.
 */
export async function withRetries<T>(fn: () => Promise<T>, options: RetryOptions): Promise<T> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const upstream = err instanceof UpstreamError ? err : new UpstreamError(String((err as Error)?.message ?? err), { retryable: true });
      if (!upstream.retryable || attempt >= options.attempts) throw upstream;
      const backoff = options.baseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2);
      await sleep(Math.min(options.maxDelayMs, Math.max(backoff, upstream.retryAfterMs ?? 0)));
    }
  }
}
