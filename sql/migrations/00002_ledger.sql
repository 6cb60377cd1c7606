-- The ledger: accounts, API keys (SHA-256 only), plans and packs, credit grants, debits,
-- rate-limit windows, usage events and idempotent batch responses.
-- Balances are never stored: they are derived from credit_grants and debits.

CREATE TABLE plans (
  name                text PRIMARY KEY,
  rank                integer NOT NULL UNIQUE,
  -- null means unlimited (a custom plan without ceiling)
  requests_per_minute integer,
  requests_per_day    integer,
  requests_per_month  integer,
  max_batch_size      integer
);

INSERT INTO plans (name, rank, requests_per_minute, requests_per_day, requests_per_month, max_batch_size) VALUES
  ('Developer', 0, 60, 5000, 50000, 50),
  ('Startup', 1, 300, 50000, 500000, 200),
  ('Enterprise', 2, 1200, 200000, 2000000, 1000);

CREATE TABLE packs (
  name      text PRIMARY KEY,
  matches   integer NOT NULL CHECK (matches > 0),
  -- the rate-limit preset an unexpired pack of this kind gives its account
  plan      text NOT NULL REFERENCES plans (name),
  valid_for interval NOT NULL
);

INSERT INTO packs (name, matches, plan, valid_for) VALUES
  ('Agent', 12, 'Developer', interval '12 months'),
  ('Scale', 25000, 'Startup', interval '12 months'),
  ('Index', 250000, 'Enterprise', interval '12 months');

CREATE TABLE accounts (
  id             uuid PRIMARY KEY,
  email          text UNIQUE,
  -- email-signup accounts get 100 free matches per rolling 30 days while no pack has credits
  free_allowance boolean NOT NULL DEFAULT false,
  -- false for keys bought by payment without an account (reverse farcaster answers 403)
  has_account    boolean NOT NULL DEFAULT true,
  unmetered      boolean NOT NULL DEFAULT false,
  plan_override  text REFERENCES plans (name),
  created_at     timestamptz NOT NULL
);

CREATE TABLE api_keys (
  id           uuid PRIMARY KEY,
  account_id   uuid NOT NULL REFERENCES accounts (id),
  key_hash     text NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  prefix       text NOT NULL,
  name         text,
  created_at   timestamptz NOT NULL,
  last_used_at timestamptz,
  revoked_at   timestamptz
);

CREATE INDEX api_keys_active_by_account ON api_keys (account_id) WHERE revoked_at IS NULL;

CREATE TABLE credit_grants (
  id         bigserial PRIMARY KEY,
  account_id uuid NOT NULL REFERENCES accounts (id),
  pack       text NOT NULL REFERENCES packs (name),
  matches    integer NOT NULL CHECK (matches > 0),
  granted_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  -- what caused the grant (admin request, settled payment, ...): a retry cannot grant twice
  grant_key  text NOT NULL,
  UNIQUE (account_id, grant_key)
);

CREATE INDEX credit_grants_by_expiry ON credit_grants (account_id, expires_at);

-- A debit is keyed on the call (or job) that caused it. When a debit spans two packs it is
-- written as one row per pack drawn (part 0, 1, ...) under the same call key.
-- `drawn_after` is the running total drawn from that pack including this row, so a pack's
-- remaining credits are read from its newest debit instead of summing all of them.
CREATE TABLE debits (
  -- insertion order, to read a ledger back in sequence; deliberately not indexed, since every
  -- billable call writes a row and the key below already identifies it
  id          bigserial NOT NULL,
  account_id  uuid NOT NULL REFERENCES accounts (id),
  call_key    text NOT NULL,
  part        smallint NOT NULL DEFAULT 0,
  grant_id    bigint REFERENCES credit_grants (id),
  source      text NOT NULL CHECK (source IN ('pack', 'free', 'unfunded')),
  matches     integer NOT NULL CHECK (matches > 0),
  drawn_after integer,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (account_id, call_key, part),
  CHECK ((source = 'pack') = (grant_id IS NOT NULL AND drawn_after IS NOT NULL))
);

CREATE INDEX debits_running_total ON debits (grant_id, drawn_after DESC) WHERE grant_id IS NOT NULL;
CREATE INDEX debits_free_window ON debits (account_id, created_at) WHERE source = 'free';

-- Three fixed UTC windows per account in one row, so one row lock makes a count atomic
-- across every server process on the same database.
CREATE TABLE rate_windows (
  account_id   uuid PRIMARY KEY REFERENCES accounts (id),
  minute_start timestamptz NOT NULL,
  minute_used  integer NOT NULL,
  day_start    timestamptz NOT NULL,
  day_used     integer NOT NULL,
  month_start  timestamptz NOT NULL,
  month_used   integer NOT NULL
) WITH (fillfactor = 10);
-- Every call of an account rewrites its row: the free space keeps each new version on the
-- same page (a HOT update), so the hot row never moves and its index is never touched.

CREATE TABLE usage_events (
  id         bigserial PRIMARY KEY,
  account_id uuid NOT NULL REFERENCES accounts (id),
  key_id     uuid NOT NULL REFERENCES api_keys (id),
  -- route template, e.g. /v1/wallet/{address}
  route      text NOT NULL,
  status     smallint NOT NULL,
  latency_ms real NOT NULL,
  -- rate-limit units spent
  units      integer NOT NULL,
  wallets    integer NOT NULL,
  matches    integer NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE INDEX usage_events_by_account ON usage_events (account_id, created_at);

CREATE TABLE idempotent_responses (
  account_id   uuid NOT NULL REFERENCES accounts (id),
  idem_key     text NOT NULL,
  request_hash text NOT NULL,
  status       integer NOT NULL,
  body         text NOT NULL,
  created_at   timestamptz NOT NULL,
  PRIMARY KEY (account_id, idem_key)
);
