# eoingest: PGXS build.  `make && make install`, then `bash test/run-all.sh`.
EXTENSION = eoingest
MODULE_big = eoingest
OBJS = \
	src/eoingest.o \
	src/shmem.o \
	src/launcher.o \
	src/worker.o \
	src/job.o \
	src/kafka.o \
	src/decode.o \
	src/sink.o \
	src/batch.o \
	src/offsets.o \
	src/csv.o \
	src/twophase.o \
	src/upsert.o \
	src/deadletter.o \
	src/positions.o \
	src/partitions.o \
	src/policy.o \
	src/txn.o \
	src/api.o \
	src/avro.o \
	src/registry.o

DATA = $(wildcard sql/eoingest--*.sql)

REGRESS = setup api formats transform upsert deadletters batchbytes operations multitopic
REGRESS_OPTS = --use-existing

PG_CPPFLAGS = -I$(srcdir)/src -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare
SHLIB_LINK = -lrdkafka -lavro -lcurl

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# pg_regress runs in the database the launcher watches (eoingest.database).
CONTRIB_TESTDB = postgres

# Every object depends on every header: small project, no stale builds.
$(OBJS): $(wildcard src/*.h)
