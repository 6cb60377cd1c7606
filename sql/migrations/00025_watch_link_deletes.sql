-- wallet.changed for identities removed, not only added or changed: a Farcaster hub's removed,
-- revoked or pruned verification deletes the wallet's farcaster link (src/hub/store.ts), and a
-- watched wallet so touched is marked for its writer's pass like an insert or update.

CREATE FUNCTION watch_dirty_after_link_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO watch_dirty (wallet)
  SELECT DISTINCT o.wallet FROM old_rows o JOIN watch_snapshots s ON s.wallet = o.wallet
      ON CONFLICT (wallet) DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER links_watch_delete AFTER DELETE ON links
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION watch_dirty_after_link_deletes();
