-- name: x402_payments_take_over
-- Takes over a claim whose claimer died before recording any outcome (claimed before $2): the
-- replay that gets the row back settles it again. Of concurrent replays exactly one gets it.
UPDATE x402_payments
   SET claimed_at = $3
 WHERE id = $1 AND state = 'claimed' AND claimed_at < $2
RETURNING id
