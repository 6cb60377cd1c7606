-- Purchases over x402: the wallets that paid, every payment's claim on its signed transfer
-- authorization (the replay key), and the recovery challenges already used.
-- Credits themselves are ordinary credit_grants rows keyed by the payment, so a retried grant
-- is a no-op; nothing here stores a balance.

-- One row per paying wallet: the account its keyless purchases created (null while the wallet
-- has only topped up keys of other accounts) and its running count of settled purchases, which
-- decides the loyalty bonus. The row is also the lock that serializes one wallet's grants.
CREATE TABLE x402_wallets (
  wallet     text PRIMARY KEY CHECK (wallet ~ '^0x[0-9a-f]{40}$'),
  account_id uuid UNIQUE REFERENCES accounts (id),
  purchases  integer NOT NULL DEFAULT 0 CHECK (purchases >= 0),
  created_at timestamptz NOT NULL
);

-- One row per signed EIP-3009 authorization ever presented for settlement, claimed before the
-- facilitator is asked to settle it. The id is the settlement reference a 500 carries.
--   claimed  settlement asked for, outcome not yet recorded (or the process stopped there)
--   failed   the facilitator refused it without broadcasting: nothing moved, nothing granted
--   unknown  the outcome may have reached the chain (timeout, 5xx, pending): kept, never granted
--            again automatically; `admin x402 redeem` grants it once after a check on chain
--   settled  settled, the grant not yet recorded
--   granted  the pack (and key) granted: replays answer newly_granted false
-- A row is never deleted, so the same authorization can never be claimed twice.
CREATE TABLE x402_payments (
  id              uuid PRIMARY KEY,
  network         text NOT NULL,
  asset           text NOT NULL,
  payer           text NOT NULL,
  nonce           text NOT NULL,
  -- the signature as presented: a replay must carry the same one to be told about the purchase
  signature       text NOT NULL,
  pay_to          text NOT NULL,
  amount          text NOT NULL,
  quantity        integer NOT NULL CHECK (quantity BETWEEN 1 AND 25),
  -- the account named by a top-up key (null for a keyless purchase) and that key's prefix
  topup_account   uuid REFERENCES accounts (id),
  topup_prefix    text,
  state           text NOT NULL CHECK (state IN ('claimed', 'failed', 'unknown', 'settled', 'granted')),
  reason          text,
  tx_hash         text,
  -- set when granted: the account credited, the key minted (null on top-ups), the payer's
  -- purchase count including this one
  account_id      uuid REFERENCES accounts (id),
  key_id          uuid REFERENCES api_keys (id),
  purchase_number integer,
  claimed_at      timestamptz NOT NULL,
  settled_at      timestamptz,
  granted_at      timestamptz,
  UNIQUE (network, asset, payer, nonce),
  CHECK (network = lower(network) AND asset = lower(asset) AND payer = lower(payer) AND nonce = lower(nonce))
);

-- Recovery challenges are stateless (HMAC-signed); a used one is remembered until it has
-- expired anyway, so it cannot be presented twice.
CREATE TABLE x402_recovery_uses (
  token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  wallet     text NOT NULL,
  used_at    timestamptz NOT NULL
);

CREATE INDEX x402_recovery_uses_by_time ON x402_recovery_uses (used_at);
