-- name: account_lock
-- Serializes, until the transaction ends, the changes of one account ($1) that must respect a
-- count (endpoints, watched wallets), without a row lock on the accounts row metering uses.
SELECT pg_advisory_xact_lock(hashtextextended($1::text, 7301))
