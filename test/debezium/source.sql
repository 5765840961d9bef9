-- t/48-debezium.t: the source database's workload. work(tbl) runs one to four random changes on tbl
-- (inserts, updates of some columns, primary-key changes, deletes), counted in dbz_stats.
CREATE TABLE dbz_stats (tbl text, op text, n bigint NOT NULL DEFAULT 0, PRIMARY KEY (tbl, op));
CREATE SEQUENCE dbz_ids START 1000000;

CREATE FUNCTION dbz_count(tbl text, op text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO dbz_stats VALUES (tbl, op, 1) ON CONFLICT (tbl, op) DO UPDATE SET n = dbz_stats.n + 1
$$;

-- A random value or, one time in eight, NULL.
CREATE FUNCTION dbz_maybe(v anyelement) RETURNS anyelement LANGUAGE sql AS $$
  SELECT CASE WHEN random() < 0.125 THEN NULL ELSE v END
$$;

-- n random rows with ids from first on, as dbz_a's columns.
CREATE FUNCTION dbz_rows(first int, n int) RETURNS SETOF dbz_a LANGUAGE sql AS $$
  SELECT i,
         dbz_maybe(round((random() * 2e9 - 1e9)::numeric, 2)),
         -- without trailing zeros: Debezium's stream drops them (1.500 arrives as 1.5; its snapshot keeps them)
         dbz_maybe(CASE WHEN random() < 0.5 THEN trim_scale((random() * 1e6)::numeric(20, 9))
                        ELSE (floor(random() * 1e15)::numeric * 1e10 + 0.000001) * (CASE WHEN random() < 0.5 THEN -1 ELSE 1 END) END),
         dbz_maybe(timestamptz '2000-01-01 00:00:00+00' + random() * interval '10000 days'),
         dbz_maybe(timestamp '1960-01-01 00:00:00' + random() * interval '30000 days'),
         dbz_maybe(date '1900-01-01' + (random() * 80000)::int),
         dbz_maybe(time '00:00:00' + random() * interval '86399.999999 seconds'),
         dbz_maybe(gen_random_uuid()),
         dbz_maybe(jsonb_build_object('i', i, 'r', random(), 's', 'say "hi"\ there', 'a', jsonb_build_array(1, null, 'x'))),
         dbz_maybe(CASE WHEN random() < 0.1 THEN ''::bytea ELSE decode(md5(random()::text) || '00ff', 'hex') END),
         dbz_maybe(ARRAY[i, NULL, (random() * 100)::int]),
         dbz_maybe(ARRAY['a,b', 'say "hi"', NULL, '', 'NULL', E'back\\slash']),
         dbz_maybe((enum_range(NULL::dbz_mood))[1 + (random() * 3)::int]),
         dbz_maybe(random() * 1e6),
         dbz_maybe(random() < 0.5),
         dbz_maybe(CASE WHEN random() < 0.1 THEN '' ELSE E'O''Brien \\ "q" \u00e9 ' || md5(random()::text) END)
    FROM generate_series(first, first + n - 1) AS i
$$;

-- 6,400 characters that do not compress: stored out of line (TOASTed).
CREATE FUNCTION dbz_big() RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 200)
$$;

-- An existing id of tbl at random (NULL if tbl is empty).
CREATE FUNCTION dbz_pick(tbl text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  k int;
BEGIN
  EXECUTE format('SELECT id FROM %I WHERE id >= (SELECT min(id) + random() * (max(id) - min(id)) FROM %I) ORDER BY id LIMIT 1', tbl, tbl)
    INTO k;
  RETURN k;
END
$$;

CREATE FUNCTION work(tbl text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  r float8;
  k int;
  i int;
BEGIN
  FOR i IN 1 .. 1 + (random() * 3)::int LOOP
    r := random();
    k := dbz_pick(tbl);
    IF k IS NULL OR r < 0.35 THEN
      k := nextval('dbz_ids')::int;
      EXECUTE format('INSERT INTO %I SELECT * FROM dbz_rows($1, $2)', tbl) USING k, 1;
      IF tbl = 'dbz_b' AND random() < 0.3 THEN
        -- a value stored out of line, which later updates of other columns leave unchanged
        UPDATE dbz_b SET note = dbz_big() WHERE id = k;
      END IF;
      PERFORM dbz_count(tbl, 'insert');
    ELSIF r < 0.55 THEN
      -- some columns, among them to and from NULL
      EXECUTE format('UPDATE %I SET (amount, ts, j, note, ints) = (SELECT amount, ts, j, note, ints FROM dbz_rows($1, 1)) WHERE id = $1', tbl) USING k;
      PERFORM dbz_count(tbl, 'update');
    ELSIF r < 0.70 THEN
      EXECUTE format('UPDATE %I SET (big, ts0, d, t, u, b, texts, m, f8, flag) = (SELECT big, ts0, d, t, u, b, texts, m, f8, flag FROM dbz_rows($1, 1)) WHERE id = $1', tbl) USING k;
      PERFORM dbz_count(tbl, 'update');
    ELSIF r < 0.82 THEN
      -- a primary-key change (and a column with it)
      EXECUTE format('UPDATE %I SET id = $2, amount = 1.5 WHERE id = $1', tbl) USING k, nextval('dbz_ids')::int;
      PERFORM dbz_count(tbl, 'key change');
    ELSE
      EXECUTE format('DELETE FROM %I WHERE id = $1', tbl) USING k;
      PERFORM dbz_count(tbl, 'delete');
    END IF;
  END LOOP;
END
$$;

-- One transaction: a random amount from one random account of dbz_acct to another (two updates) and,
-- half the time, a row in dbz_xfer with the source account's xfers counted up in the same transaction.
CREATE FUNCTION transfer() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  a int := 1 + floor(random() * 10)::int;
  b int := 1 + (a + floor(random() * 9)::int) % 10;   -- any account but a
  amt bigint := 1 + floor(random() * 100)::bigint;
BEGIN
  UPDATE dbz_acct SET balance = balance - amt WHERE id = a;
  IF random() < 0.5 THEN
    INSERT INTO dbz_xfer VALUES (nextval('dbz_ids')::int, a, b, amt);
    UPDATE dbz_acct SET xfers = xfers + 1 WHERE id = a;
  END IF;
  UPDATE dbz_acct SET balance = balance + amt WHERE id = b;
END
$$;
