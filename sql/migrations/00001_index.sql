-- The identity index: wallets, the identities attached to them and the evidence behind each.
-- Every identity is one row in `links`, keyed by (wallet, kind, value, route), so the same
-- observation imported twice lands on the same row.

-- The route-to-class allowlist. A route that is not here yields no evidence class.
CREATE TABLE evidence_routes (
  route         text PRIMARY KEY,
  class         text NOT NULL CHECK (class IN ('onchain', 'farcaster', 'attested-social', 'manual', 'aggregated')),
  -- true where a twitter handle from this route rests only on text the owner typed into their own record
  self_declared boolean NOT NULL DEFAULT false
);

INSERT INTO evidence_routes (route, class, self_declared) VALUES
  ('ens-primary', 'onchain', false),
  ('ens-text', 'onchain', true),
  ('lens-profile', 'onchain', false),
  ('farcaster-verification', 'farcaster', false),
  ('farcaster-x-verified', 'farcaster', false),
  ('x-signin', 'attested-social', false),
  ('github-signin', 'attested-social', false),
  ('manual-review', 'manual', false),
  ('correlation', 'aggregated', false),
  ('agent-registry', 'onchain', false);

-- Every wallet the service has examined. `last_updated` is the newest identity observation
-- (null when nothing was ever attached); `checked_at` the newest look of any kind.
CREATE TABLE wallets (
  address      text PRIMARY KEY CHECK (address ~ '^0x[0-9a-f]{40}$'),
  last_updated timestamptz,
  checked_at   timestamptz NOT NULL
);

CREATE TABLE links (
  wallet        text NOT NULL REFERENCES wallets (address),
  kind          text NOT NULL CHECK (kind IN ('twitter', 'farcaster', 'ens', 'lens', 'github', 'agent')),
  -- lowercased handle or name; the fid as text for farcaster; 'agent' for the agent descriptor
  value         text NOT NULL,
  route         text NOT NULL,
  fid           bigint CHECK ((kind = 'farcaster') = (fid IS NOT NULL)),
  self_declared boolean NOT NULL DEFAULT false,
  detail        jsonb,
  observed_at   timestamptz NOT NULL,
  PRIMARY KEY (wallet, kind, value, route)
);

CREATE INDEX links_twitter_handle ON links (value) WHERE kind = 'twitter';
CREATE INDEX links_farcaster_fid ON links (fid) WHERE kind = 'farcaster';

CREATE TABLE farcaster_accounts (
  fid        bigint PRIMARY KEY,
  username   text NOT NULL,
  followers  integer CHECK (followers >= 0),
  updated_at timestamptz NOT NULL
);

CREATE INDEX farcaster_accounts_username ON farcaster_accounts (username);

-- Reachability is per handle, not per wallet: one re-check serves every wallet holding it.
CREATE TABLE twitter_reachability (
  handle       text PRIMARY KEY,
  reachability text NOT NULL CHECK (reachability IN ('live', 'suspended', 'deactivated', 'unchecked')),
  checked_at   timestamptz NOT NULL
);

-- Materialized counts for /stats, one row a UTC day.
CREATE TABLE stats_snapshots (
  day    date PRIMARY KEY,
  counts jsonb NOT NULL,
  as_of  timestamptz NOT NULL
);

-- Every identity row of the given wallets with its evidence class, farcaster account and
-- twitter reachability joined in, so a lookup of any size is one statement. A wallet with
-- nothing attached comes back as one row with null link columns (checked-empty); a wallet
-- never seen has no row. One SQL statement, so callers that join it in get it inlined.
CREATE FUNCTION identity_rows(p_addresses text[])
RETURNS TABLE (
  address text, last_updated timestamptz, checked_at timestamptz,
  kind text, value text, route text, class text, self_declared boolean, detail jsonb,
  observed_at timestamptz, fid float8, fc_username text, fc_followers integer,
  reachability text, reachability_checked_at timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT w.address, w.last_updated, w.checked_at,
         l.kind, l.value, l.route, r.class,
         (l.self_declared OR coalesce(r.self_declared, false)),
         l.detail, l.observed_at, l.fid::float8,
         fa.username, fa.followers,
         tr.reachability, tr.checked_at
    FROM wallets w
    LEFT JOIN links l ON l.wallet = w.address
    LEFT JOIN evidence_routes r ON r.route = l.route
    LEFT JOIN farcaster_accounts fa ON fa.fid = l.fid
    LEFT JOIN twitter_reachability tr ON l.kind = 'twitter' AND tr.handle = l.value
   WHERE w.address = ANY (p_addresses)
$$;
