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
	src/jsonvalue.o \
	src/jsonscan.o \
	src/sink.o \
	src/direct.o \
	src/batch.o \
	src/offsets.o \
	src/csv.o \
	src/twophase.o \
	src/upsert.o \
	src/cdc.o \
	src/cdcreplay.o \
	src/cdctxn.o \
	src/deadletter.o \
	src/positions.o \
	src/partitions.o \
	src/policy.o \
	src/fence.o \
	src/settings.o \
	src/txn.o \
	src/api.o \
	src/avro.o \
	src/avrocheck.o \
	src/avroflat.o \
	src/registry.o \
	src/wirenum.o \
	src/errclass.o \
	src/shape.o

DATA = $(wildcard sql/eoingest--*.sql)

REGRESS = setup api formats mappings transform upsert deadletters batchbytes operations multitopic cdc cdctxn cdcschemas cdcreplay
REGRESS_OPTS = --use-existing

PG_CPPFLAGS = -I$(srcdir)/src -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare
SHLIB_LINK = -lrdkafka -lavro -lcurl

# Another librdkafka than the system's: make RDKAFKA_PREFIX=/opt/librdkafka
# (its include/ and lib/; the library is found there at run time too).
RDKAFKA_PREFIX ?=
ifneq ($(RDKAFKA_PREFIX),)
# -isystem: searched before /usr/include, and its headers' warnings are not ours.
PG_CPPFLAGS += -isystem $(RDKAFKA_PREFIX)/include
SHLIB_LINK := -L$(RDKAFKA_PREFIX)/lib -Wl,-rpath,$(RDKAFKA_PREFIX)/lib $(SHLIB_LINK)
endif

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# pg_regress runs in the database the launcher watches (eoingest.database).
CONTRIB_TESTDB = postgres

# Every object depends on every header: small project, no stale builds.
$(OBJS): $(wildcard src/*.h)
