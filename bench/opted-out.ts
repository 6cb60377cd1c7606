// --opted-out P%: puts P% of the generated index on the opt-out list (00021_opt_outs.sql) before
// the cases run, so the metered lookup is measured with the suppression probe finding wallets,
// beside a run with none (--opted-out 0%, the default, empties the list).
import type { Db } from "../src/db/types.ts";

/** "1%", "0.5%" or "0" to a fraction of the index; throws on anything else. */
export function parseOptedOut(value: string): number {
  const match = /^(\d+(?:\.\d+)?)%?$/.exec(value.trim());
  const pct = match ? Number(match[1]) : NaN;
  if (!(pct >= 0 && pct <= 100)) throw new Error(`Cannot run the bench: --opted-out must be a percentage from 0% to 100%, not ${JSON.stringify(value)}`);
  return pct / 100;
}

/**
 * Empties the list, then opts out every wallet whose row number n has n mod (1 / fraction) equal to
 * half that step (1% : n = 50, 150, ...), so none of the wallets the bench's answer check picks is on
 * it. Recorded as an operator's request each, as `npm run admin -- opt-out add` would. Returns how many.
 */
export async function setOptedOut(db: Db, options: { wallets: number; fraction: number }): Promise<number> {
  const step = options.fraction > 0 ? Math.max(1, Math.round(1 / options.fraction)) : 0;
  const address = `'0x' || md5('walletid-bench:' || n) || left(md5('walletid-bench:' || n || ':tail'), 8)`;
  await db.transaction(async (tx) => {
    await tx.exec("DELETE FROM opt_outs; DELETE FROM opt_out_requests");
    if (step === 0) return;
    await tx.exec(`
      WITH requests AS (
        INSERT INTO opt_out_requests (wallet, action, via, reason, created_at)
        SELECT ${address}, 'remove', 'operator', 'bench --opted-out', now()
          FROM generate_series(${Math.floor(step / 2) || step}, ${options.wallets}, ${step}) AS n
        RETURNING id, wallet, created_at)
      INSERT INTO opt_outs (wallet, opted_out_at, request_id) SELECT wallet, created_at, id FROM requests;
      ANALYZE opt_outs;`);
  }, { bulk: true });
  const [row] = await db.query<{ n: number }>("SELECT count(*)::integer AS n FROM opt_outs");
  return row.n;
}
