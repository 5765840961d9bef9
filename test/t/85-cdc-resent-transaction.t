#!/usr/bin/env bash
# transactions => 'source' after Kafka Connect restarts: Debezium sends again
# the END of a source transaction that a batch already committed, with the
# tail of its events or with none of them.  That transaction must be known
# as committed, so that the next one commits, also when the worker was
# SIGKILLed in between (what the job knows of committed transactions is
# stored with its offsets).
#   T1 whole; the worker killed; T1's tail (its second event) and its END
#   again, then T2 whole: T2 commits.
#   T2's END again, with no event, then T3 whole: T3 commits.
#   T2's END again alone; the worker killed; T3's END again, then T4 whole:
#   T4 commits (what the job keeps never goes back to an older END).
#   T4's second event again, without its END; then T5 whole: T5 commits.
# The ids are PostgreSQL's "txid:lsn", with the LSN of each message, as
# Debezium 3.6.1's PostgreSQL connector writes them.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 11
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
pfx=rs$$
eoi-kafka create-topic "$pfx.transaction" 1 >/dev/null
eoi-kafka create-topic "$pfx.public.accounts" 1 >/dev/null
sql "DROP TABLE IF EXISTS rs_acc; CREATE TABLE rs_acc (id int PRIMARY KEY, balance int)" >/dev/null

# A transaction's messages: BEGIN, one update per account, END (LSNs from `lsn`).
tx() {  # TXID LSN BAL1 BAL2 -> $pfx.tx and $pfx.acc files, appended
  local txid=$1 lsn=$2 b1=$3 b2=$4
  printf '{"id":"%s:%s"}\t{"status":"BEGIN","id":"%s:%s","ts_ms":1,"event_count":null,"data_collections":null}\n' \
    "$txid" "$lsn" "$txid" "$lsn" >>"$EOINGEST_RUN/$pfx.tx"
  event "$txid" $((lsn + 88)) 1 "$b1" 1 "$lsn"
  event "$txid" $((lsn + 176)) 2 "$b2" 2 "$lsn"
  end "$txid" $((lsn + 264))
}
event() {  # TXID LSN ID BALANCE ORDER PRIOR_COMMIT_LSN
  printf '{"id":%s}\t{"before":null,"after":{"id":%s,"balance":%s},"source":{"connector":"postgresql","db":"src","schema":"public","table":"accounts","sequence":"[\\"%s\\",\\"%s\\"]"},"op":"u","ts_ms":1,"transaction":{"id":"%s:%s","total_order":%s,"data_collection_order":%s}}\n' \
    "$3" "$3" "$4" "$6" "$2" "$1" "$2" "$5" "$5" >>"$EOINGEST_RUN/$pfx.acc"
}
end() {  # TXID LSN
  printf '{"id":"%s:%s"}\t{"status":"END","id":"%s:%s","ts_ms":1,"event_count":2,"data_collections":[{"data_collection":"public.accounts","event_count":2}]}\n' \
    "$1" "$2" "$1" "$2" >>"$EOINGEST_RUN/$pfx.tx"
}
send() {  # data first, then the transaction topic
  eoi-kafka produce -K "$pfx.public.accounts" <"$EOINGEST_RUN/$pfx.acc" >/dev/null
  eoi-kafka produce -K "$pfx.transaction" <"$EOINGEST_RUN/$pfx.tx" >/dev/null
  rm -f "$EOINGEST_RUN/$pfx.acc" "$EOINGEST_RUN/$pfx.tx"
  touch "$EOINGEST_RUN/$pfx.acc" "$EOINGEST_RUN/$pfx.tx"
}
touch "$EOINGEST_RUN/$pfx.acc" "$EOINGEST_RUN/$pfx.tx"

sql "SELECT eoingest.create_job(name => 'rs_job', brokers => '$KAFKA_BROKERS',
       topic => '$pfx.transaction, $pfx.public.accounts',
       format => 'json', envelope => 'debezium', transactions => 'source', on_error => 'fail',
       targets => '{\"public.accounts\": \"rs_acc\"}', start_offset => 'earliest',
       batch_timeout_ms => 100);
     SELECT eoingest.start_job('rs_job')" >/dev/null

tx 701 30000 90 110
send
check "T1 commits" wait_until 30 "SELECT array_agg(balance ORDER BY id) = '{90,110}' FROM rs_acc"

pid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'rs_job'")
kill -9 "$pid"
check "the worker was SIGKILLed after T1 and runs again" \
  wait_until 60 "SELECT pid IS NOT NULL AND pid <> $pid FROM eoingest.job_status WHERE name = 'rs_job'"

# Connect restarted: T1's second event and its END again, then T2.
printf '{"id":"701:30000"}\t{"status":"BEGIN","id":"701:30000","ts_ms":1,"event_count":null,"data_collections":null}\n' \
  >>"$EOINGEST_RUN/$pfx.tx"
event 701 30176 2 110 2 30000
end 701 30264
tx 702 30264 80 120
send
check "T2 commits after T1's tail and END came again" \
  wait_until 30 "SELECT array_agg(balance ORDER BY id) = '{80,120}' FROM rs_acc"

# T2's END again, with none of its events, then T3.
end 702 30528
tx 703 30528 70 130
send
check "T3 commits after T2's END came again alone" \
  wait_until 30 "SELECT array_agg(balance ORDER BY id) = '{70,130}' FROM rs_acc"
check "the job reads to the end of both topics" wait_until 30 "SELECT eoingest.wait_for_catchup('rs_job', '1 s')"

# T2's END again, alone in its batch: what the job keeps must stay T3's END,
# the last one committed, and not go back to T2's.  Then the worker is
# killed, T3's END comes again and T4 whole: T4 commits.
end 702 30528
send
check "the job reads T2's END sent again" wait_until 30 "SELECT eoingest.wait_for_catchup('rs_job', '1 s')"
pid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'rs_job'")
kill -9 "$pid"
check "the worker was SIGKILLed and runs again" \
  wait_until 60 "SELECT pid IS NOT NULL AND pid <> $pid FROM eoingest.job_status WHERE name = 'rs_job'"
end 703 30792
tx 704 30792 60 140
send
check "T4 commits after T3's END came again, across a worker restart" \
  wait_until 30 "SELECT array_agg(balance ORDER BY id) = '{60,140}' FROM rs_acc"

# T4's second event again without its END (its END came again in an
# earlier batch, which ended before this event): it is of a transaction
# committed already, the LSN of the commit before it says so; T5 commits.
event 704 30968 2 140 2 30792
send
check "the job reads T4's event sent again" wait_until 30 "SELECT eoingest.wait_for_catchup('rs_job', '1 s')"
tx 705 31056 50 150
send
check "T5 commits after an event of T4 came again without its END" \
  wait_until 30 "SELECT array_agg(balance ORDER BY id) = '{50,150}' FROM rs_acc"
is "$(sql "SELECT state || ' ' || coalesce(last_error, '') FROM eoingest.job_status WHERE name = 'rs_job'")" "running " \
  "the job runs, without an error"

sql "SELECT eoingest.drop_job('rs_job')" >/dev/null
sql "DROP TABLE rs_acc" >/dev/null
done_testing
