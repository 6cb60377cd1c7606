// The one small query interface every domain function uses; two drivers implement it.

export type Row = Record<string, unknown>;

export interface Db {
  readonly driver: "postgres" | "pglite";
  /** One parameterised statement ($1, $2, ...). */
  query<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Several statements without parameters (migrations only). */
  exec(text: string): Promise<void>;
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
