-- name: reverse_entries_select_page
-- One page of a reverse lookup after the keyset position ($3, $4), with the total, whether the key
-- hashed as $6 belongs to an account, and the identity rows of the page's wallets, so a page reads
-- everything it shows in one statement and its metering statement reads nothing more.
-- The page is one range scan of the primary key (kind, key, rank, wallet); $5 is the page size
-- plus one, to tell whether more pages exist: that last entry comes as one row without identity
-- columns. The total is read from reverse_counts, which triggers keep, rather than counted.
-- Reverse twitter needs no key here (a call paid over x402 has none; an unauthenticated one is
-- refused by its metering). Nothing is read for reverse farcaster without a key inside an
-- account (refused before anything is metered): then the one row has a null entry.
-- The identity columns are identity_rows' (00001_index.sql), joined per entry in page order and
-- then by links' primary key, the order identity_rows yields; the twitter reachability is probed
-- for twitter links only (a null handle matches nothing without an index descent).
WITH caller AS (
  SELECT a.has_account
    FROM api_keys ak
    JOIN accounts a ON a.id = ak.account_id
   WHERE ak.key_hash = $6 AND ak.revoked_at IS NULL
), page AS (
  SELECT e.wallet, e.rank, row_number() OVER (ORDER BY e.rank, e.wallet) AS n
    FROM reverse_entries e
   WHERE e.kind = $1 AND e.key = $2 AND (e.rank, e.wallet) > ($3::integer, $4::text)
     AND ($1 = 'twitter' OR EXISTS (SELECT 1 FROM caller c WHERE c.has_account))
   ORDER BY e.rank, e.wallet
   LIMIT $5
)
SELECT coalesce((SELECT c.n FROM reverse_counts c WHERE c.kind = $1 AND c.key = $2), 0) AS total_count,
       (SELECT c.has_account FROM caller c) AS account_bound,
       p.wallet AS entry, p.rank,
       w.address, w.last_updated, w.checked_at,
       l.kind, l.value, l.route, r.class,
       (l.self_declared OR coalesce(r.self_declared, false)) AS self_declared,
       l.detail, l.observed_at, l.fid::float8 AS fid,
       fa.username AS fc_username, fa.followers AS fc_followers,
       tr.reachability, tr.checked_at AS reachability_checked_at
  FROM (SELECT 1) AS one
  LEFT JOIN page p ON true
  LEFT JOIN wallets w ON w.address = p.wallet AND p.n < $5
  LEFT JOIN links l ON l.wallet = w.address
  LEFT JOIN evidence_routes r ON r.route = l.route
  LEFT JOIN farcaster_accounts fa ON fa.fid = l.fid
  LEFT JOIN twitter_reachability tr ON tr.handle = CASE WHEN l.kind = 'twitter' THEN l.value END
 ORDER BY p.n, l.kind, l.value, l.route
