# A build kept in $EOINGEST_CACHE across runs (test/rdkafka.sh, test/pgbuild.sh):
# its prefix holds .built, the time the build finished, once it is complete.
# The script sets WHAT (what it builds, with its version) and PREFIX, and
# defines cmd_build; cached_build_main runs the subcommand asked for.

cached_build_done() { [ -f "$PREFIX/.built" ]; }
cached_build_mark() { date -u +%FT%TZ >"$PREFIX/.built"; }

cmd_prefix() {
  cached_build_done || eoi_die "$WHAT not built; run '$0 build'"
  echo "$PREFIX"
}

cmd_status() {
  if cached_build_done; then
    echo "$WHAT built in $PREFIX ($(cat "$PREFIX/.built"))"
  else
    echo "$WHAT not built"
    return 3
  fi
}

# cached_build_main ARGS...: build|prefix|status, and the script's own extra
# subcommands as cmd_<name> functions named in CACHED_BUILD_EXTRA.
cached_build_main() {
  [ $# -eq 1 ] || usage
  case " build prefix status ${CACHED_BUILD_EXTRA:-} " in
    *" $1 "*) "cmd_$1" ;;
    *) usage ;;
  esac
}
