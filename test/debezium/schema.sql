-- t/48-debezium.t: the captured tables (the same DDL on the source and on the target).
-- dbz_a: replica identity default (Debezium's before image holds the key only), 3 partitions.
-- dbz_b: replica identity full (the whole before image), 1 partition, truncated once, some values TOASTed.
CREATE TYPE dbz_mood AS ENUM ('sad', 'ok', 'happy', 'it''s "complicated"');
CREATE TABLE dbz_a (
  id int PRIMARY KEY,
  amount numeric(12,2),     -- Decimal (decimal.handling.mode=precise)
  big numeric,              -- VariableScaleDecimal
  ts timestamptz,           -- ZonedTimestamp
  ts0 timestamp,            -- MicroTimestamp
  d date,                   -- Date
  t time,                   -- MicroTime
  u uuid,                   -- Uuid
  j jsonb,                  -- Json
  b bytea,                  -- bytes (binary.handling.mode=bytes)
  ints int[],
  texts text[],
  m dbz_mood,               -- Enum
  f8 float8,
  flag boolean,
  note text
);
CREATE TABLE dbz_b (LIKE dbz_a INCLUDING ALL);
-- dbz_t: replica identity default and values large enough to be TOASTed.
CREATE TABLE dbz_t (id int PRIMARY KEY, big text, n int);
-- dbz_acct and dbz_xfer: transfers between accounts (transfer() on the source), read by a job with
-- transactions => 'source'. Within each source transaction the sum of the balances stays the same and
-- sum(xfers) is the number of rows of dbz_xfer (a logged transfer spans both tables, so two topics).
CREATE TABLE dbz_acct (id int PRIMARY KEY, balance bigint NOT NULL, xfers int NOT NULL DEFAULT 0);
CREATE TABLE dbz_xfer (id int PRIMARY KEY, src int, dst int, amount bigint);
