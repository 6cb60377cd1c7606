-- name: credit_grants_insert
-- One grant row for $2 packs; the grant key makes a retried grant a no-op.
INSERT INTO credit_grants (account_id, pack, matches, granted_at, expires_at, grant_key)
SELECT $1, p.name, p.matches * $2::integer, $3::timestamptz, $3::timestamptz + p.valid_for, $4
  FROM packs p
 WHERE p.name = $5
    ON CONFLICT (account_id, grant_key) DO NOTHING
RETURNING id::text AS id, matches, expires_at
