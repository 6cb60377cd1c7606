-- name: links_select_farcaster_wallets
-- The wallets a hub verification binds to each fid of $1, for a username change.
SELECT fid::text, wallet FROM links
 WHERE kind = 'farcaster' AND fid = ANY ($1::bigint[]) AND route = 'farcaster-verification'
