// A Db that fails statements on demand, for the database-failure suites: every statement, inside
// transactions too, first asks `failure(text)`; an Error is thrown instead of running it.
import type { Db } from "../../src/db/types.ts";

export function failingDb(inner: Db, failure: (text: string) => Error | undefined): Db {
  return {
    driver: inner.driver,
    async query(text, params) {
      const err = failure(text);
      if (err) throw err;
      return await inner.query(text, params);
    },
    async queryArrays(text, params, options) {
      const err = failure(text);
      if (err) throw err;
      return await inner.queryArrays(text, params, options);
    },
    exec: (text) => inner.exec(text),
    transaction: (fn, options) => inner.transaction((tx) => fn(failingDb(tx, failure)), options),
    // the suite closes the real database itself
    close: async () => {},
  };
}
