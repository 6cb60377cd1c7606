-- name: live_answers_select_fresh
-- Answers of sources $2 for wallets $1 given after $3 (the cache TTL): found or not, they are reused.
SELECT source, address
  FROM live_answers
 WHERE address = ANY ($1::text[]) AND source = ANY ($2::text[]) AND checked_at > $3
