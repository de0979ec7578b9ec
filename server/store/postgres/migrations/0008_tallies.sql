-- Tallies (collections.ts `tallies`): per value of a field, how many records have another field in a
-- set, kept as one row that a trigger adjusts in the transaction of every write of the collection, so
-- a count reads one row instead of every matching record (issue 24: the quota check of each create
-- read every live sandbox of the account, and slowed as the account filled). A trigger rather than
-- Twinbox's own code: it holds for every process, every statement (an expiry sweep, an operator's
-- psql) and every restart alike. server/store/postgres/collection.ts reads them; migrate.ts checks
-- that every declared tally has its trigger.

-- Up Migration

CREATE TABLE twinbox_tallies (
  tally text NOT NULL,
  key text NOT NULL,
  n integer NOT NULL CHECK (n >= 0),
  PRIMARY KEY (tally, key)
);

-- Arguments: the tally's name, the field counted by, the field tested, then the values that count.
-- Only string values count or key, as in the embedded store (a number 1 is not the status "1").
CREATE FUNCTION twinbox_tally() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tally_name text := TG_ARGV[0];
  by_field text := TG_ARGV[1];
  where_field text := TG_ARGV[2];
  counted text[] := TG_ARGV[3:];
  old_key text;
  new_key text;
BEGIN
  IF TG_OP <> 'INSERT' AND jsonb_typeof(OLD.data -> by_field) = 'string'
     AND jsonb_typeof(OLD.data -> where_field) = 'string' AND OLD.data ->> where_field = ANY (counted) THEN
    old_key := OLD.data ->> by_field;
  END IF;
  IF TG_OP <> 'DELETE' AND jsonb_typeof(NEW.data -> by_field) = 'string'
     AND jsonb_typeof(NEW.data -> where_field) = 'string' AND NEW.data ->> where_field = ANY (counted) THEN
    new_key := NEW.data ->> by_field;
  END IF;
  -- Most updates (queued -> building -> ready, an extend) stay in or out: no row to touch or lock.
  IF old_key IS NOT DISTINCT FROM new_key THEN
    RETURN NULL;
  END IF;
  -- Schema-qualified: an operator's session may have another search_path than Twinbox's.
  IF old_key IS NOT NULL THEN
    EXECUTE format('UPDATE %I.twinbox_tallies SET n = n - 1 WHERE tally = $1 AND key = $2', TG_TABLE_SCHEMA)
      USING tally_name, old_key;
  END IF;
  IF new_key IS NOT NULL THEN
    EXECUTE format(
      'INSERT INTO %I.twinbox_tallies AS t (tally, key, n) VALUES ($1, $2, 1) '
      'ON CONFLICT (tally, key) DO UPDATE SET n = t.n + 1', TG_TABLE_SCHEMA)
      USING tally_name, new_key;
  END IF;
  RETURN NULL;
END
$$;

-- The quota of every create (server/sandboxes/service.ts): an owner's queued, building or ready ones.
-- CREATE TRIGGER locks the table against writes until this migration commits, so the counts below
-- miss no concurrent write.
CREATE TRIGGER sandboxes_owner_id_status_tally AFTER INSERT OR UPDATE OR DELETE ON sandboxes
  FOR EACH ROW EXECUTE FUNCTION twinbox_tally('sandboxes_owner_id_status_tally', 'owner_id', 'status', 'building', 'queued', 'ready');
INSERT INTO twinbox_tallies (tally, key, n)
  SELECT 'sandboxes_owner_id_status_tally', data ->> 'owner_id', count(*) FROM sandboxes
  WHERE jsonb_typeof(data -> 'owner_id') = 'string' AND jsonb_typeof(data -> 'status') = 'string'
    AND data ->> 'status' IN ('building', 'queued', 'ready')
  GROUP BY 2;

-- Down Migration

DROP TRIGGER sandboxes_owner_id_status_tally ON sandboxes;
DROP FUNCTION twinbox_tally();
DROP TABLE twinbox_tallies;
