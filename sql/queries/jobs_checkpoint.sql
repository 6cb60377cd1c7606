-- name: jobs_checkpoint
-- Records progress and renews the lease, only while worker $2 still holds it: no row back
-- means another worker took the job over and this one must stop without writing more.
-- $5 is JSON text: typed jsonb, the drivers would encode the string once more.
-- Adds to matched_written, what the completion bills, the chunk's wallets that resolve to twitter
-- or farcaster: $9 of those the index stage settled (it read their links), and those of the rest,
-- $8, counted here after the chunk's own writes. In the chunk's transaction, so once per chunk.
UPDATE jobs
   SET processed = $3, stage = $4, stage_stats = $5::text::jsonb,
       lease_expires_at = $6::timestamptz + make_interval(secs => $7::integer),
       matched_written = matched_written + $9::integer + (
         SELECT count(*)::integer
           FROM unnest($8::text[]) AS a (wallet)
          WHERE EXISTS (SELECT 1 FROM links l WHERE l.wallet = a.wallet AND l.kind IN ('twitter', 'farcaster')))
 WHERE id = $1 AND lease_owner = $2 AND status = 'processing'
RETURNING id
