-- Webhook endpoints, their events and deliveries (an outbox claimed with leases), and the
-- watchlist with the small tables that turn a change to a watched wallet into one event.

CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY,
  account_id uuid NOT NULL REFERENCES accounts(id),
  url text NOT NULL,
  events text[] NOT NULL,
  -- AES-GCM under the server's webhook key (src/webhooks/secrets.ts): base64 of iv || ciphertext
  secret_enc text NOT NULL,
  -- the secret before the last rotation, signing beside the new one until previous_until
  previous_secret_enc text,
  previous_until timestamptz,
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text,
  created_at timestamptz NOT NULL,
  deleted_at timestamptz,
  CHECK (events <@ ARRAY['job.completed', 'job.failed', 'wallet.changed']::text[] AND cardinality(events) > 0)
);
CREATE INDEX webhook_endpoints_by_account ON webhook_endpoints (account_id, created_at) WHERE deleted_at IS NULL;

-- One event per cause and account; `body` is the JSON sent, the same bytes on every attempt.
CREATE TABLE webhook_events (
  id uuid PRIMARY KEY,
  account_id uuid NOT NULL REFERENCES accounts(id),
  type text NOT NULL CHECK (type IN ('job.completed', 'job.failed', 'wallet.changed')),
  body text NOT NULL,
  created_at timestamptz NOT NULL
);

-- One row per (event, endpoint) send; a redelivery adds another row for the same event.
CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY,
  event_id uuid NOT NULL REFERENCES webhook_events(id),
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints(id),
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  lease_owner text,
  lease_expires_at timestamptz,
  last_status_code integer,
  created_at timestamptz NOT NULL,
  delivered_at timestamptz
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);

CREATE TABLE watched_wallets (
  account_id uuid NOT NULL REFERENCES accounts(id),
  wallet text NOT NULL,
  added_at timestamptz NOT NULL,
  PRIMARY KEY (account_id, wallet)
);
CREATE INDEX watched_wallets_by_wallet ON watched_wallets (wallet);

-- What each watched wallet's record said when last compared (src/webhooks/changes.ts): one row
-- per wallet anyone watches, removed when nobody does. The triggers below look only here, so an
-- unwatched wallet costs a write nothing beyond an anti-join against this table.
CREATE TABLE watch_snapshots (
  wallet text PRIMARY KEY,
  summary jsonb NOT NULL
);

-- Watched wallets a statement may have changed, since the writer's pass last compared them.
CREATE TABLE watch_dirty (
  wallet text PRIMARY KEY
);

CREATE FUNCTION watch_dirty_after_links() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO watch_dirty (wallet)
  SELECT DISTINCT n.wallet FROM new_rows n JOIN watch_snapshots s ON s.wallet = n.wallet
      ON CONFLICT (wallet) DO NOTHING;
  RETURN NULL;
END $$;

CREATE FUNCTION watch_dirty_after_farcaster_accounts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO watch_dirty (wallet)
  SELECT DISTINCT l.wallet
    FROM new_rows n
    JOIN links l ON l.kind = 'farcaster' AND l.fid = n.fid
    JOIN watch_snapshots s ON s.wallet = l.wallet
      ON CONFLICT (wallet) DO NOTHING;
  RETURN NULL;
END $$;

CREATE FUNCTION watch_dirty_after_twitter_reachability() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO watch_dirty (wallet)
  SELECT DISTINCT l.wallet
    FROM new_rows n
    JOIN links l ON l.kind = 'twitter' AND l.value = n.handle
    JOIN watch_snapshots s ON s.wallet = l.wallet
      ON CONFLICT (wallet) DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER links_watch_insert AFTER INSERT ON links
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION watch_dirty_after_links();
CREATE TRIGGER links_watch_update AFTER UPDATE ON links
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION watch_dirty_after_links();
CREATE TRIGGER farcaster_accounts_watch_insert AFTER INSERT ON farcaster_accounts
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION watch_dirty_after_farcaster_accounts();
CREATE TRIGGER farcaster_accounts_watch_update AFTER UPDATE ON farcaster_accounts
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION watch_dirty_after_farcaster_accounts();
CREATE TRIGGER twitter_reachability_watch_insert AFTER INSERT ON twitter_reachability
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION watch_dirty_after_twitter_reachability();
CREATE TRIGGER twitter_reachability_watch_update AFTER UPDATE ON twitter_reachability
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION watch_dirty_after_twitter_reachability();

-- The wallet.changed events of one writer's pass (src/events/watch.ts): for every account that
-- watches a changed wallet and has an enabled endpoint subscribed to wallet.changed, one event
-- and one delivery per such endpoint. An event whose record shows twitter or farcaster
-- (p_billable) costs the account 1 match, debited under 'event:<id>'; an account without credits
-- gets the withheld body instead and no debit. Returns the events written.
CREATE FUNCTION watch_events_create(p_wallets text[], p_full text[], p_withheld text[], p_billable boolean[], p_now timestamptz)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  r record;
  v_id uuid;
  v_full boolean;
  v_written integer := 0;
BEGIN
  FOR r IN
    SELECT w.account_id, c.full_body, c.withheld_body, c.billable, a.unmetered
      FROM unnest(p_wallets, p_full, p_withheld, p_billable) AS c (wallet, full_body, withheld_body, billable)
      JOIN watched_wallets w ON w.wallet = c.wallet
      JOIN accounts a ON a.id = w.account_id
     WHERE EXISTS (SELECT 1 FROM webhook_endpoints e
                    WHERE e.account_id = w.account_id AND e.enabled AND e.deleted_at IS NULL
                      AND 'wallet.changed' = ANY (e.events))
     ORDER BY w.account_id, c.wallet
  LOOP
    v_id := gen_random_uuid();
    v_full := true;
    IF r.billable AND NOT r.unmetered THEN
      IF coalesce((SELECT s.available FROM account_credits(r.account_id, p_now) s), 0) > 0 THEN
        PERFORM debit_matches(r.account_id, 'event:' || v_id::text, 1, p_now);
      ELSE
        v_full := false;
      END IF;
    END IF;
    INSERT INTO webhook_events (id, account_id, type, body, created_at)
    VALUES (v_id, r.account_id, 'wallet.changed', CASE WHEN v_full THEN r.full_body ELSE r.withheld_body END, p_now);
    INSERT INTO webhook_deliveries (id, event_id, endpoint_id, next_attempt_at, created_at)
    SELECT gen_random_uuid(), v_id, e.id, p_now, p_now
      FROM webhook_endpoints e
     WHERE e.account_id = r.account_id AND e.enabled AND e.deleted_at IS NULL
       AND 'wallet.changed' = ANY (e.events);
    v_written := v_written + 1;
  END LOOP;
  RETURN v_written;
END $$;
