# shellcheck shell=bash
# Helpers for tests that produce with confluent-kafka's serializers (source after tap.sh).

# avro_python: the Python of a venv with confluent-kafka's Avro, JSON Schema, Protobuf and
# registry clients (in $EOINGEST_CACHE/avro-venv, installed from PyPI the first time), on stdout.
avro_python() {
  local venv=$EOINGEST_CACHE/avro-venv
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import confluent_kafka.schema_registry.avro' 2>/dev/null; then
    rm -rf "$venv"
    { python3 -m venv "$venv" && "$venv/bin/pip" install -q 'confluent-kafka[avro,schemaregistry]'; } </dev/null >"$EOINGEST_RUN/avro-venv.log" 2>&1 ||
      { cat "$EOINGEST_RUN/avro-venv.log" >&2; eoi_die "could not install confluent-kafka into $venv"; }
  fi
  # JSONSerializer (JSON Schema records) needs jsonschema, which venvs made before it was used lack
  if ! "$venv/bin/python" -c 'import jsonschema, confluent_kafka.schema_registry.json_schema' 2>/dev/null; then
    "$venv/bin/pip" install -q jsonschema </dev/null >>"$EOINGEST_RUN/avro-venv.log" 2>&1 ||
      { cat "$EOINGEST_RUN/avro-venv.log" >&2; eoi_die "could not install jsonschema into $venv"; }
  fi
  # ProtobufSerializer (Protobuf records; and schema_registry.py reading a Protobuf descriptor)
  # needs protobuf and googleapis-common-protos (confluent-kafka's protobuf extra), which
  # venvs made before it was used lack
  if ! "$venv/bin/python" -c 'import google.protobuf, confluent_kafka.schema_registry.protobuf' 2>/dev/null; then
    "$venv/bin/pip" install -q protobuf googleapis-common-protos </dev/null >>"$EOINGEST_RUN/avro-venv.log" 2>&1 ||
      { cat "$EOINGEST_RUN/avro-venv.log" >&2; eoi_die "could not install protobuf into $venv"; }
  fi
  echo "$venv/bin/python"
}
