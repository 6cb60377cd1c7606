// Statements sent together (pipelined on one transaction, or beside each other) are awaited all
// before the first failure is thrown: nothing is left running on a transaction that is ending.

/** Every one of `promises` settled; their values in order, or the first failure in order. */
export async function settleAll<T extends readonly unknown[]>(promises: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const outcomes = await Promise.allSettled(promises);
  for (const outcome of outcomes) if (outcome.status === "rejected") throw outcome.reason;
  return outcomes.map((o) => (o as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
