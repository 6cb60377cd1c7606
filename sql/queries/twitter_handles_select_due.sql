-- name: twitter_handles_select_due
-- The next $1 handles to re-check: never checked first (no row, or imported as `unchecked`),
-- then the oldest check first. A handle already checked since $2 (the start of the UTC day) is
-- left out, so a run resumed the same day goes on where the interrupted one stopped.
SELECT h.handle
  FROM (SELECT DISTINCT value AS handle FROM links WHERE kind = 'twitter') h
  LEFT JOIN twitter_reachability tr ON tr.handle = h.handle
 WHERE tr.handle IS NULL OR tr.reachability = 'unchecked' OR tr.checked_at < $2::timestamptz
 ORDER BY (tr.handle IS NULL OR tr.reachability = 'unchecked') DESC, tr.checked_at ASC NULLS FIRST, h.handle
 LIMIT $1
