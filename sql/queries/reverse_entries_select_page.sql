-- name: reverse_entries_select_page
-- One page of a reverse lookup after the keyset position ($3, $4), with the total and, for the
-- key hashed as $6, whether it belongs to an account (reverse farcaster refuses other keys
-- before anything is metered). The page is one range scan of the primary key
-- (kind, key, rank, wallet); $5 is the page size plus one, to tell whether more pages exist.
-- The total is read from reverse_counts, which triggers keep, rather than counted each page.
SELECT coalesce((SELECT c.n FROM reverse_counts c WHERE c.kind = $1 AND c.key = $2), 0) AS total_count,
       (SELECT a.has_account
          FROM api_keys ak
          JOIN accounts a ON a.id = ak.account_id
         WHERE ak.key_hash = $6 AND ak.revoked_at IS NULL) AS account_bound,
       p.wallet, p.rank
  FROM (SELECT 1) AS one
  LEFT JOIN LATERAL (
       SELECT e.wallet, e.rank
         FROM reverse_entries e
        WHERE e.kind = $1 AND e.key = $2 AND (e.rank, e.wallet) > ($3::integer, $4::text)
        ORDER BY e.rank, e.wallet
        LIMIT $5
  ) p ON true
