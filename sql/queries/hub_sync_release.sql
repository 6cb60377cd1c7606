-- name: hub_sync_release
-- Gives up holder $1's hub lease, so another process may take it at once.
UPDATE hub_sync SET holder = NULL, lease_until = NULL
 WHERE name = 'farcaster' AND holder = $1::uuid
RETURNING name
