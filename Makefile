# eoingest: PGXS build.  `make && make install`, then `bash test/run-all.sh`.
EXTENSION = eoingest
MODULE_big = eoingest
OBJS = \
	src/base/settings.o \
	src/base/shmem.o \
	src/base/jobstats.o \
	src/base/txn.o \
	src/base/fault.o \
	src/base/errtext.o \
	src/store/job.o \
	src/store/offsets.o \
	src/store/fence.o \
	src/store/deadletter.o \
	src/store/targetchanges.o \
	src/kafka/kafka.o \
	src/kafka/kafkameta.o \
	src/kafka/kafkapoll.o \
	src/kafka/policy.o \
	src/kafka/partitions.o \
	src/kafka/batch.o \
	src/kafka/positions.o \
	src/kafka/groupfence.o \
	src/format/csv.o \
	src/format/columns.o \
	src/format/mapping.o \
	src/format/decode.o \
	src/format/decodejson.o \
	src/format/jsonschema.o \
	src/format/jsonbuild.o \
	src/format/decfloat.o \
	src/format/jsonscan.o \
	src/format/jsonvalue.o \
	src/format/avro.o \
	src/format/avrotype.o \
	src/format/avrovalue.o \
	src/format/avroflat.o \
	src/format/avrojson.o \
	src/format/avrocheck.o \
	src/format/protobuf.o \
	src/format/protoparse.o \
	src/format/protovalue.o \
	src/format/registry.o \
	src/format/wirenum.o \
	src/format/connect.o \
	src/apply/attempt.o \
	src/apply/sink.o \
	src/apply/direct.o \
	src/apply/upsert.o \
	src/apply/upsertbulk.o \
	src/apply/upsertkeep.o \
	src/apply/errclass.o \
	src/apply/shape.o \
	src/apply/evolve.o \
	src/apply/target.o \
	src/apply/replay.o \
	src/envelope/envelope.o \
	src/envelope/cdc.o \
	src/envelope/cdcjson.o \
	src/envelope/cdcconv.o \
	src/envelope/cdcevolve.o \
	src/envelope/cdcmode.o \
	src/envelope/cdctxn.o \
	src/envelope/cdcreplay.o \
	src/worker/worker.o \
	src/worker/workerbatch.o \
	src/worker/workeroffsets.o \
	src/worker/workerfail.o \
	src/worker/launcher.o \
	src/worker/cluster.o \
	src/worker/twophase.o \
	src/api/api.o \
	src/api/jobdef.o \
	src/api/lifecycle.o \
	src/api/jobstatus.o \
	src/api/batchfunc.o \
	src/api/batchcols.o \
	src/api/statsfunc.o \
	src/api/preview.o \
	src/api/deadletters.o \
	src/api/utility.o \
	src/api/eoingest.o

DATA = $(wildcard sql/eoingest--*.sql)

REGRESS = setup api formats intfields floatfields mappings fieldmap transform transformcols transformjson upsert deadletters batchbytes operations multitopic cdc cdctxn cdcschemas cdcreplay cdcmodes connectjson
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
$(OBJS): $(wildcard src/*/*.h)
