-- name: oauth_consents_take
-- Answers a consent once: the row goes, so a second submission of the same form finds nothing.
DELETE FROM oauth_consents WHERE id = $1 RETURNING id
