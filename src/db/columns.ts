// Reading rows that come as arrays (Db.queryArrays): where each named column sits.

/** The index of each of `wanted` among a statement's column `names`; throws naming a missing one. */
export function columnsAt<K extends string>(names: readonly string[], wanted: readonly K[], statement: string): Record<K, number> {
  const at = {} as Record<K, number>;
  for (const name of wanted) {
    const i = names.indexOf(name);
    if (i < 0) throw new Error(`Cannot read the rows of ${statement}: it returned no ${name} column`);
    at[name] = i;
  }
  return at;
}

/**
 * `read(names)` kept for the column list it was made from: a statement returns the same columns
 * every time, so they are looked up once, not once per execution.
 */
export function memoColumns<T>(read: (names: readonly string[]) => T): (names: readonly string[]) => T {
  let last: { joined: string; value: T } | undefined;
  return (names) => {
    const joined = names.join(",");
    if (last?.joined !== joined) last = { joined, value: read(names) };
    return last.value;
  };
}
