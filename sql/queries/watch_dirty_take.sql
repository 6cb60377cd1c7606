-- name: watch_dirty_take
-- The watched wallets the triggers of 00022_webhooks.sql marked since the last pass, taken
-- (deleted) by this writer's transaction, which compares them before it commits.
DELETE FROM watch_dirty RETURNING wallet
