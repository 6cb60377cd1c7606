-- name: farcaster_accounts_select_usernames
-- The usernames known for fids $1.
SELECT fid::text, username FROM farcaster_accounts WHERE fid = ANY ($1::bigint[])
