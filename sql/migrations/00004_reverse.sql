-- Reverse lookups: the wallets holding a twitter handle or a farcaster username, kept in the
-- order the API pages them, so that a page is one index range scan and a cursor is a position.

-- One row per (kind, key, wallet) that a reverse lookup returns. Maintained by the triggers
-- below from links and farcaster_accounts, so every writer of the index keeps it current.
CREATE TABLE reverse_entries (
  kind   text NOT NULL CHECK (kind IN ('twitter', 'farcaster')),
  -- the lowercased handle or username
  key    text NOT NULL,
  wallet text NOT NULL,
  -- The page order is followers descending, wallets without a count last, then address. Stored
  -- as -followers, or 1 without a count, so that the order is ascending in both columns and a
  -- keyset position is a plain row comparison on the index.
  rank   integer NOT NULL,
  PRIMARY KEY (kind, key, rank, wallet)
);

CREATE INDEX reverse_entries_wallet ON reverse_entries (wallet);

-- What reverse_entries should hold for the given wallets. One SELECT, so it is inlined.
-- Twitter: every wallet holding the handle through any route, ranked by the followers of the
-- farcaster account its record shows (records.ts: attested first, most followers, lowest fid).
-- Farcaster: only wallets whose every link has an owner-attested evidence class (no
-- correlation, no unclassified route), under the username of each attested farcaster link,
-- ranked by that account's followers.
CREATE FUNCTION reverse_entries_for(p_wallets text[])
RETURNS TABLE (kind text, key text, wallet text, rank integer)
LANGUAGE sql STABLE AS $$
  WITH l AS (
    SELECT l.wallet, l.kind, l.value, l.fid,
           coalesce(r.class IN ('onchain', 'farcaster', 'attested-social', 'manual'), false) AS attested
      FROM links l
      LEFT JOIN evidence_routes r ON r.route = l.route
     WHERE l.wallet IN (SELECT unnest(p_wallets))
  ),
  fc AS (
    SELECT l.wallet, l.fid, fa.username, fa.followers, bool_or(l.attested) AS attested
      FROM l
      JOIN farcaster_accounts fa ON fa.fid = l.fid
     WHERE l.kind = 'farcaster'
     GROUP BY l.wallet, l.fid, fa.username, fa.followers
  ),
  shown AS (
    SELECT DISTINCT ON (fc.wallet) fc.wallet, fc.followers
      FROM fc
     ORDER BY fc.wallet, fc.attested DESC, coalesce(fc.followers, -1) DESC, fc.fid
  ),
  eligible AS (
    SELECT l.wallet FROM l GROUP BY l.wallet HAVING bool_and(l.attested)
  )
  SELECT DISTINCT 'twitter', l.value, l.wallet, coalesce(-s.followers, 1)
    FROM l
    LEFT JOIN shown s ON s.wallet = l.wallet
   WHERE l.kind = 'twitter'
  UNION
  SELECT 'farcaster', lower(fc.username), fc.wallet, coalesce(-fc.followers, 1)
    FROM fc
    JOIN eligible e ON e.wallet = fc.wallet
   WHERE fc.attested
$$;

CREATE FUNCTION reverse_entries_refresh(p_wallets text[])
RETURNS void
LANGUAGE sql AS $$
  DELETE FROM reverse_entries e WHERE e.wallet IN (SELECT unnest(p_wallets));
  INSERT INTO reverse_entries (kind, key, wallet, rank)
  SELECT * FROM reverse_entries_for(p_wallets)
      ON CONFLICT DO NOTHING;
$$;

-- Statement-level, reading the transition tables: an import of a thousand lines refreshes its
-- wallets once, not a thousand times.
CREATE FUNCTION reverse_entries_after_links()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM reverse_entries_refresh(ARRAY(SELECT DISTINCT o.wallet FROM old_rows o));
  ELSE
    PERFORM reverse_entries_refresh(ARRAY(SELECT DISTINCT n.wallet FROM new_rows n));
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER links_reverse_insert AFTER INSERT ON links
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION reverse_entries_after_links();
CREATE TRIGGER links_reverse_update AFTER UPDATE ON links
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION reverse_entries_after_links();
CREATE TRIGGER links_reverse_delete AFTER DELETE ON links
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION reverse_entries_after_links();

-- A username or follower count that changes re-ranks (or renames) every wallet linked to the fid.
CREATE FUNCTION reverse_entries_after_farcaster_accounts()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM reverse_entries_refresh(ARRAY(
    SELECT DISTINCT l.wallet FROM links l JOIN new_rows n ON l.fid = n.fid WHERE l.kind = 'farcaster'));
  RETURN NULL;
END $$;

CREATE TRIGGER farcaster_accounts_reverse_insert AFTER INSERT ON farcaster_accounts
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION reverse_entries_after_farcaster_accounts();
CREATE TRIGGER farcaster_accounts_reverse_update AFTER UPDATE ON farcaster_accounts
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION reverse_entries_after_farcaster_accounts();

-- How many entries each (kind, key) has: meta.total_count of every page, read by key instead of
-- counting the handle's whole index range each time. Kept by triggers on reverse_entries, in
-- (kind, key) order so that two imports touching the same keys lock them in the same order.
CREATE TABLE reverse_counts (
  kind text NOT NULL,
  key  text NOT NULL,
  n    integer NOT NULL CHECK (n >= 0),
  PRIMARY KEY (kind, key)
);

CREATE FUNCTION reverse_counts_after_entries()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO reverse_counts AS rc (kind, key, n)
    SELECT e.kind, e.key, count(*) FROM new_rows e GROUP BY e.kind, e.key ORDER BY e.kind, e.key
        ON CONFLICT (kind, key) DO UPDATE SET n = rc.n + excluded.n;
  ELSE
    UPDATE reverse_counts rc
       SET n = rc.n - d.n
      FROM (SELECT e.kind, e.key, count(*)::integer AS n FROM old_rows e GROUP BY e.kind, e.key) d
     WHERE rc.kind = d.kind AND rc.key = d.key;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER reverse_entries_count_insert AFTER INSERT ON reverse_entries
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION reverse_counts_after_entries();
CREATE TRIGGER reverse_entries_count_delete AFTER DELETE ON reverse_entries
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION reverse_counts_after_entries();

-- An index that existed before this migration gets its entries (and counts) now.
INSERT INTO reverse_entries (kind, key, wallet, rank)
SELECT * FROM reverse_entries_for(ARRAY(SELECT address FROM wallets));

-- Secrets the server generates for itself on first start (the cursor signing key), shared by
-- every process on the same database. A value set in the environment takes precedence.
CREATE TABLE server_secrets (
  name       text PRIMARY KEY,
  value      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
