-- name: x402_wallets_count_purchase
-- Counts one settled purchase for the paying wallet and returns the new count with the
-- wallet's own account. The upsert takes the wallet's row lock, so two purchases of one wallet
-- are numbered one after the other (each tenth earns the loyalty bonus exactly once).
INSERT INTO x402_wallets AS w (wallet, purchases, created_at)
VALUES ($1, 1, $2)
    ON CONFLICT (wallet) DO UPDATE SET purchases = w.purchases + 1
RETURNING w.account_id, w.purchases
