// Client-side deadlines: a statement (or a transaction's BEGIN and COMMIT) that gets no answer in
// time fails with DatabaseTimeoutError, so a partitioned or hung database cannot hold a request.

/** No answer from the database within the deadline (DB_STATEMENT_TIMEOUT_MS plus a margin). */
export class DatabaseTimeoutError extends Error {
  readonly code = "DATABASE_TIMEOUT";

  constructor(ms: number) {
    super(`Cannot reach the database: no answer within ${ms} ms`);
  }
}

/** `work`, or DatabaseTimeoutError after `ms` (0: no deadline); `onTimeout` runs when it fires. */
export function withDeadline<T>(work: PromiseLike<T>, ms: number, onTimeout: () => void = () => {}): Promise<T> {
  if (!ms) return Promise.resolve(work);
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      onTimeout();
      reject(new DatabaseTimeoutError(ms));
    }, ms);
    work.then(
      (value) => (clearTimeout(timer), resolve(value)),
      (err: unknown) => (clearTimeout(timer), reject(err)),
    );
  });
}

/**
 * A transaction whose round trips outside `fn` (getting a connection and BEGIN, then COMMIT or
 * ROLLBACK) each have `ms` to answer; the statements inside `fn` carry their own deadlines.
 * Should the deadline pass before `fn` starts, `fn` never runs: a late BEGIN rolls back at once.
 */
export function boundedTransaction<Tx, T>(
  begin: (body: (tx: Tx) => Promise<T>) => PromiseLike<T>,
  fn: (tx: Tx) => Promise<T>,
  ms: number,
  onTimeout: () => void = () => {},
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let expired = false;
    const arm = () => {
      timer = setTimeout(() => {
        expired = true;
        onTimeout();
        reject(new DatabaseTimeoutError(ms));
      }, ms);
    };
    arm();
    begin(async (tx) => {
      clearTimeout(timer);
      if (expired) throw new DatabaseTimeoutError(ms);
      try {
        return await fn(tx);
      } finally {
        arm();
      }
    }).then(
      (value) => (clearTimeout(timer), resolve(value)),
      (err: unknown) => (clearTimeout(timer), reject(err)),
    );
  });
}
