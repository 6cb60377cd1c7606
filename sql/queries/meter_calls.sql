-- name: meter_calls
-- A group of calls metered in one statement and one commit (meter_calls in
-- 00011_group_metering.sql, now 00018_account_standing.sql), identity rows included: $9 holds
-- each call's addresses comma-joined, $10 the billable matches a caller counted itself (or null).
-- Per call, its identity rows (outcome null) and one row carrying its metering outcome.
-- The bill list ($7 calls, $8 wallets, pairwise) leaves out opted-out wallets (00021_opt_outs.sql),
-- one probe of opt_outs a wallet: they are answered as never seen and never billed.
SELECT m.*
  FROM (SELECT array_agg(b.ix ORDER BY b.n) AS calls, array_agg(b.wallet ORDER BY b.n) AS wallets
          FROM unnest($7::integer[], $8::text[]) WITH ORDINALITY AS b (ix, wallet, n)
         WHERE NOT EXISTS (SELECT 1 FROM opt_outs o WHERE o.wallet = b.wallet)) bill
 CROSS JOIN LATERAL meter_calls($1, $2, $3::text[], $4::integer[], $5::boolean[], $6::integer[], bill.calls, bill.wallets,
                                $9::text[], $10::integer[]) m
