-- name: hub_sync_renew
-- Moves holder $1's hub lease to $2. Nothing returned: the lease was lost and the holder must stop.
UPDATE hub_sync SET lease_until = $2::timestamptz
 WHERE name = 'farcaster' AND holder = $1::uuid
RETURNING name
