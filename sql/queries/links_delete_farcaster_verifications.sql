-- name: links_delete_farcaster_verifications
-- Removes the farcaster identities of pairs ($1[i] wallet, $2[i] fid) that a hub verification
-- bound: a verification removed, revoked or pruned on the hub. The links trigger refreshes
-- reverse_entries. Returns the wallets that lost one.
DELETE FROM links l
 USING unnest($1::text[], $2::bigint[]) AS t (wallet, fid)
 WHERE l.wallet = t.wallet AND l.kind = 'farcaster' AND l.fid = t.fid AND l.value = t.fid::text
   AND l.route = 'farcaster-verification'
RETURNING l.wallet
