-- name: live_answers_upsert_many
-- The newest answer of a source for a wallet replaces the previous one.
INSERT INTO live_answers AS a (source, address, found, checked_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::timestamptz[])
    ON CONFLICT (address, source) DO UPDATE
   SET found = excluded.found, checked_at = excluded.checked_at
 WHERE excluded.checked_at >= a.checked_at
