#!/usr/bin/env python3
"""Helper of bench/run.sh: process CPU accounting, timed commands, and the report.

  bench.py server-cpu PMPID           CPU seconds used so far by a PostgreSQL server: the
                                      postmaster, its live children, and (through the
                                      postmaster's cutime/cstime) every child it has reaped
  bench.py cpu PID...                 utime+stime seconds of these processes
  bench.py hwm PID...                 largest VmHWM (kB) of these processes
  bench.py snap PMPID BROKERPID       "server machine broker" CPU seconds so far (machine: busy
                                      time of all CPUs from /proc/stat)
  bench.py timed OUT -- CMD...        run CMD; write "user_s sys_s maxrss_kb" of CMD and
                                      everything it waited for to OUT; exit with its status
  bench.py perf-fix FILE SO_COPY      name unresolved eoingest.so addresses in a perf report
  bench.py report --dir DIR           raw.tsv, latency.tsv, meta.tsv [, paired.tsv, profile*.txt] in DIR
                                      -> DIR/latest.md and DIR/latest.png

Only the report needs matplotlib (for the PNG); without it the Markdown is still written.
"""
import math
import os
import resource
import statistics
import subprocess
import sys

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid):
    """Fields of /proc/PID/stat after the command name: [0] is state (field 3)."""
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    return s[s.rfind(")") + 2:].split()


def proc_cpu(pid, children=False):
    try:
        a = _stat_fields(pid)
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    ticks = int(a[11]) + int(a[12])
    if children:
        ticks += int(a[13]) + int(a[14])
    return ticks / CLK_TCK


def server_cpu(pm):
    total = proc_cpu(pm, children=True)
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            a = _stat_fields(d)
        except (FileNotFoundError, ProcessLookupError):
            continue
        if a[1] == str(pm):
            total += (int(a[11]) + int(a[12]) + int(a[13]) + int(a[14])) / CLK_TCK
    return total


def machine_busy():
    """Busy CPU seconds of the whole machine since boot (all but idle and iowait)."""
    with open("/proc/stat") as f:
        a = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (a + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def vm_hwm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def timed(out, cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    status = subprocess.call(cmd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w") as f:
        f.write(f"{after.ru_utime - before.ru_utime:.3f} {after.ru_stime - before.ru_stime:.3f} "
                f"{after.ru_maxrss}\n")
    return status if status >= 0 else 128 - status


# ---------------------------------------------------------------- report

def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    if not lines:
        return []
    head = lines[0].split("\t")
    return [dict(zip(head, l.split("\t"))) for l in lines[1:]]


def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def med(values):
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(values) if values else None


def fmt_int(x):
    return "—" if x is None else f"{x:,.0f}"


def fmt(x, digits=1):
    return "—" if x is None else f"{x:,.{digits}f}"


def summarize(raw):
    """One entry per variant, in the order the variants were first run."""
    variants = {}
    for r in raw:
        v = variants.setdefault(r["variant"], {"meta": r, "runs": []})
        v["runs"].append(r)
    out = []
    for key, v in variants.items():
        m = v["meta"]
        ok = [r for r in v["runs"] if r["status"] == "ok"]
        bad = [r for r in v["runs"] if r["status"] not in ("ok", "na")]
        na = [r for r in v["runs"] if r["status"] == "na"]
        s = {"variant": key, "label": m["label"], "group": m["group"], "pk": m["pk"],
             "method": m["method"], "mode": m["mode"], "batch": m["batch"], "par": m["par"],
             "format": m["format"], "parts": m["parts"], "options": m.get("options", ""),
             "runs": len(ok), "failed": len(bad), "na": bool(na) and not ok,
             "note": (na or bad or [{"note": ""}])[0]["note"]}
        if ok:
            def per_row(field):
                return med([fnum(r[field]) / fnum(r["rows"]) if fnum(r[field]) is not None else None
                            for r in ok])
            s["rate"] = med([fnum(r["rows"]) / fnum(r["seconds"]) for r in ok])
            s["rows"] = med([fnum(r["rows"]) for r in ok])
            s["seconds"] = med([fnum(r["seconds"]) for r in ok])
            s["cpu_all_us"] = med([(fnum(r["server_cpu"]) + fnum(r["client_cpu"])) / fnum(r["rows"]) * 1e6
                                   for r in ok])
            proc = [fnum(r["proc_cpu"]) for r in ok]
            s["cpu_proc_us"] = (med([p / fnum(r["rows"]) * 1e6 for p, r in zip(proc, ok)])
                                if all(p is not None for p in proc) else None)
            s["wal_b"] = per_row("wal")
            s["broker_us"] = med([fnum(r.get("broker_cpu")) / fnum(r["rows"]) * 1e6
                                  if fnum(r.get("broker_cpu")) is not None else None for r in ok])
            s["other_load"] = med([fnum(r.get("other_cpu")) / fnum(r["seconds"])
                                   if fnum(r.get("other_cpu")) is not None else None for r in ok])
            s["rss_mb"] = med([fnum(r["rss_anon_kb"]) / 1024 if fnum(r["rss_anon_kb"]) else None for r in ok])
            s["hwm_mb"] = med([fnum(r["hwm_kb"]) / 1024 if fnum(r["hwm_kb"]) else None for r in ok])
            s["spread"] = (min(fnum(r["rows"]) / fnum(r["seconds"]) for r in ok),
                           max(fnum(r["rows"]) / fnum(r["seconds"]) for r in ok))
        out.append(s)
    return out


def pk_tag(pk):
    """The label's suffix for the variant's table: bench_pk, bench_part, bench_nopk."""
    return {"yes": " [PK]", "part": " [partitioned]"}.get(pk, "")


def find(summary, **kw):
    kw.setdefault("options", "")
    for s in summary:
        if all(str(s.get(k)) == str(v) for k, v in kw.items()) and s.get("rate"):
            return s
    return None


def worker_curve(paired):
    """Per worker count of the back-to-back rounds: medians of rate, ratio and the CPU split."""
    out = []
    for par in sorted({r["par"] for r in paired}, key=int):
        rows = [r for r in paired if r["par"] == par]

        def per_row(field):
            return med([fnum(r.get(field)) / fnum(r["eoingest_rows_per_s"]) / fnum(r["seconds"]) * 1e6
                        if fnum(r.get(field)) is not None and fnum(r.get("seconds")) else None for r in rows])

        def share(r):
            sc, bc = fnum(r.get("server_cpu")), fnum(r.get("broker_cpu"))
            return bc / (sc + bc) if sc is not None and bc is not None and sc + bc > 0 else None

        def cores(r):
            sc, bc, sec = fnum(r.get("server_cpu")), fnum(r.get("broker_cpu")), fnum(r.get("seconds"))
            return (sc + bc) / sec if sc is not None and bc is not None and sec else None

        out.append({"par": par, "rate": med([fnum(r["eoingest_rows_per_s"]) for r in rows]),
                    "ratio": med([fnum(r["ratio"]) for r in rows]),
                    "server_us": per_row("server_cpu"), "broker_us": per_row("broker_cpu"),
                    "broker_share": med([share(r) for r in rows]), "cores": med([cores(r) for r in rows])})
    return out


def target_lines(summary, lat, paired=()):
    """The benchmark's targets, each met or missed by how much."""
    lines = []
    copy_ = {pk: find(summary, method="copy", pk=pk) for pk in ("no", "yes")}
    chunk = {pk: find(summary, method="kcat_chunked", pk=pk, batch="10000") for pk in ("no", "yes")}
    naive = {pk: find(summary, method="naive", pk=pk) for pk in ("no", "yes")}

    def verdict(value, goal, higher=True):
        if value is None:
            return "not measured"
        ok = value >= goal if higher else value <= goal
        if ok:
            return "**met**"
        if higher:
            return f"**missed** by {(1 - value / goal) * 100:.0f}% (needs {goal / value:.2f}× more)"
        return f"**missed** by {value - goal:,.1f}"

    def add(name, value, goal, shown, higher=True):
        lines.append(f"| {name} | {shown} | {verdict(value, goal, higher)} |")

    for par, goal in (("1", 1.0), ("2", 1.5), ("4", None)):
        ratios = sorted(fnum(r["ratio"]) for r in paired if r["par"] == par)
        if ratios:
            m = statistics.median(ratios)
            what = (f"exactly_once b=10000 par={par} ≥ {goal} × COPY FROM a file (no PK)" if goal else
                    f"(for information) exactly_once b=10000 par={par} ≥ 1.5 × COPY FROM a file (no PK)")
            add(f"{what}, back to back: median of {len(ratios)} round(s), from {ratios[0]:.2f} to "
                f"{ratios[-1]:.2f}", m, goal or 1.5, f"{m:.2f} × COPY")
    for pk in ("no", "yes"):
        tag = "no PK" if pk == "no" else "PK"
        for par in ("1", "2"):
            e = find(summary, method="eoingest", mode="exactly_once", batch="10000", par=par, pk=pk,
                     format="csv", parts="4")
            if e and copy_[pk]:
                r = e["rate"] / copy_[pk]["rate"]
                add(f"exactly_once b=10000 par={par} ≥ 0.8 × COPY ({tag})", r, 0.8, f"{r:.2f} × COPY")
            if e and chunk[pk]:
                r = e["rate"] / chunk[pk]["rate"]
                add(f"exactly_once b=10000 par={par} ≥ 1.0 × kcat\\|psql chunked ({tag})", r, 1.0,
                    f"{r:.2f} × chunked")
            if e and naive[pk]:
                r = e["rate"] / naive[pk]["rate"]
                add(f"exactly_once b=10000 par={par} ≥ 100 × naive consumer ({tag})", r, 100, f"{r:.0f} × naive")
    binary = find(summary, method="copy_binary", pk="no")
    e = find(summary, method="eoingest", mode="exactly_once", batch="10000", par="1", pk="no",
             format="csv", parts="4")
    if e and binary:
        r = e["rate"] / binary["rate"]
        add("exactly_once b=10000 par=1 ≥ 0.7 × COPY BINARY (no PK)", r, 0.7, f"{r:.2f} × COPY BINARY")
    tuned = [t for t in summary if t["method"] == "eoingest" and t["options"] and t.get("rate")
             and t["batch"] == "10000" and t["pk"] == "no"]
    for t in tuned:
        if copy_["no"]:
            r = t["rate"] / copy_["no"]["rate"]
            add(f"(for information) {t['label']} ≥ 0.8 × COPY (no PK)", r, 0.8, f"{r:.2f} × COPY")
    part_copy = find(summary, method="copy", pk="part")
    for t in summary:
        if t["method"] == "eoingest" and t["pk"] == "part" and t.get("rate") and part_copy:
            r = t["rate"] / part_copy["rate"]
            add(f"(for information) {t['label']} [partitioned] ≥ 0.8 × COPY [partitioned]", r, 0.8,
                f"{r:.2f} × COPY")
    for mode, goal, pk in (("two_phase", 0.75, "no"), ("upsert_0", 0.5, "yes")):
        e = find(summary, method="eoingest", mode=mode, batch="10000", par="1", pk=pk)
        tag = "no PK" if pk == "no" else "PK"
        if e and copy_[pk]:
            r = e["rate"] / copy_[pk]["rate"]
            add(f"{mode} b=10000 par=1 ≥ {goal} × COPY ({tag})", r, goal, f"{r:.2f} × COPY")
        else:
            na = [s for s in summary if s["mode"] == mode and s["na"]]
            why = na[0]["note"] if na else "not run"
            lines.append(f"| {mode} ≥ {goal} × COPY | — | **not measured**: {why} |")
    # A mapping of the JSON rows with four metadata columns, against the plain JSON path.
    mapped = find(summary, method="eoingest_mapping", mode="exactly_once", batch="10000", par="1")
    plain_json = find(summary, method="eoingest", mode="exactly_once", format="json", batch="10000", par="1", pk="no")
    if mapped and plain_json:
        r = mapped["rate"] / plain_json["rate"]
        add("json mapping with 4 metadata columns ≥ 0.9 × plain json (b=10000 par=1)", r, 0.9,
            f"{r:.2f} × plain json")
    # 100 topics into 100 tables (a target template), against one topic into one table.
    many = find(summary, method="eoingest_many", mode="exactly_once", batch="10000", par="1")
    one = find(summary, method="eoingest", mode="exactly_once", format="csv", batch="10000", par="1", pk="no", parts="4")
    if many and one:
        r = many["rate"] / one["rate"]
        add("100 topics into 100 tables ≥ 0.8 × one topic into one table (b=10000 par=1)", r, 0.8,
            f"{r:.2f} × one topic")
    # Following the writer schema (schema_changes) when it changes nothing, against the plain Avro path.
    evolve = find(summary, method="eoingest_evolve", mode="exactly_once", batch="10000", par="1")
    plain_avro = find(summary, method="eoingest", mode="exactly_once", format="avro", batch="10000", par="1", pk="no")
    if evolve and plain_avro:
        r = evolve["rate"] / plain_avro["rate"]
        add("avro with schema_changes ≥ 0.95 × plain avro (b=10000 par=1)", r, 0.95, f"{r:.2f} × plain avro")
    # Protobuf records against Avro ones of the same rows.
    proto = find(summary, method="eoingest", mode="exactly_once", format="protobuf", batch="10000", par="1", pk="no")
    if proto and plain_avro:
        r = proto["rate"] / plain_avro["rate"]
        add("protobuf ≥ 0.9 × avro of the same rows (b=10000 par=1)", r, 0.9, f"{r:.2f} × avro")
    # The formats against CSV, the same rows: binary should not be slower than text.
    plain_csv = find(summary, method="eoingest", mode="exactly_once", format="csv", batch="10000", par="1",
                     pk="no", parts="4")
    for fmt_name, goal in (("json", 0.8), ("avro", 1.0)):
        e = find(summary, method="eoingest", mode="exactly_once", format=fmt_name, batch="10000", par="1", pk="no")
        if e and plain_csv:
            r = e["rate"] / plain_csv["rate"]
            add(f"{fmt_name} ≥ {goal} × csv of the same rows (b=10000 par=1)", r, goal, f"{r:.2f} × csv")
    # The CDC stream (--cdc / --peers), events/s to the final state.
    cdc = find(summary, method="eoingest_cdc", format="cdc_debezium")
    cdc_upsert = find(summary, method="eoingest_cdc", format="cdc_upsert")
    sinks = [s for s in summary if s["method"] == "connect_cdc" and s.get("rate")]
    if cdc and cdc_upsert:
        r = cdc["rate"] / cdc_upsert["rate"]
        add("eoingest cdc envelope=debezium ≥ 0.8 × eoingest upsert of the same changes", r, 0.8,
            f"{r:.2f} × upsert")
    cdc_avro = find(summary, method="eoingest_cdc", format="cdc_debezium_avro")
    if cdc_avro and cdc_upsert:
        r = cdc_avro["rate"] / cdc_upsert["rate"]
        add("eoingest cdc envelope=debezium, Avro events ≥ 0.9 × eoingest upsert of the same changes", r, 0.9,
            f"{r:.2f} × upsert")
    if cdc and sinks:
        best = max(sinks, key=lambda s: s["rate"])
        r = cdc["rate"] / best["rate"]
        add(f"eoingest cdc envelope=debezium ≥ 20 × Debezium JDBC sink, its best ({best['label']})",
            r, 20, f"{r:.1f} × JDBC sink")
    rss = [(s["rss_mb"], s["label"]) for s in summary if s["method"] == "eoingest" and s.get("rss_mb")
           and not s["options"]]
    if rss:
        top = max(rss)
        add(f"worker private RSS (RssAnon) < 100 MB, largest of the eoingest runs with default options "
            f"({top[1]})", top[0], 100, f"{top[0]:.1f} MB", higher=False)
        small = [(mb, label) for mb, label in rss if "b=100000" not in label]
        if small and max(small) != top:
            top = max(small)
            add(f"(for information) the same at batch sizes up to 10,000 ({top[1]})",
                top[0], 100, f"{top[0]:.1f} MB", higher=False)
    for i, l in enumerate(l for l in lat if l.get("fraction", "-") != "-"):
        p99, goal = fnum(l["p99_ms"]), fnum(l["batch_timeout_ms"]) + 50
        add(f"{'(for information) ' if i else ''}p99 latency ≤ batch_timeout_ms + 50 = {goal:.0f} ms "
            f"at {fmt_int(fnum(l['rate']))} rows/s ({l['fraction']} of the maximum)",
            p99, goal, f"{p99:,.0f} ms", higher=False)
    return lines


def chart(summary, path, meta):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench.py: matplotlib missing, no chart", file=sys.stderr)
        return False
    rows = [s for s in summary if s.get("rate")]
    if not rows:
        return False
    rows = list(reversed(rows))
    colors = {"copy": "#555555", "copy_binary": "#333333", "kcat_tx": "#8c6d31", "kcat_chunked": "#bd9e39",
              "naive": "#d62728", "eoingest": "#1f77b4"}
    fig_h = max(3.5, 0.28 * len(rows) + 1.6)
    fig, ax = plt.subplots(figsize=(13, fig_h))
    y = range(len(rows))
    ax.barh(list(y), [s["rate"] for s in rows],
            color=[colors.get(s["method"], "#1f77b4") for s in rows])
    for i, s in enumerate(rows):
        if s["pk"] == "yes":
            ax.barh([i], [s["rate"]], color="none", edgecolor="white", hatch="//", linewidth=0)
        ax.text(s["rate"] * 1.05, i, f"{s['rate']:,.0f}", va="center", fontsize=7)
    ax.set_yticks(list(y))
    ax.set_yticklabels([s["label"] + pk_tag(s["pk"]) for s in rows], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("rows per second (median, log scale); hatched = table with a primary key")
    for pk, style in (("no", "--"), ("yes", ":")):
        c = find(summary, method="copy", pk=pk)
        if c:
            ax.axvline(c["rate"], color="black", linestyle=style, linewidth=0.8)
            ax.text(c["rate"], len(rows) - 0.4, f" COPY{' [PK]' if pk == 'yes' else ''}",
                    rotation=90, va="top", ha="right", fontsize=7)
    ax.set_title(f"eoingest benchmark: {fmt_int(fnum(meta.get('records')))} records of "
                 f"~{meta.get('record_bytes', '100')} bytes, {meta.get('cpus', '?')} CPUs", fontsize=9)
    ax.set_xlim(right=max(s["rate"] for s in rows) * 3)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return True


def report(d):
    raw = read_tsv(os.path.join(d, "raw.tsv"))
    lat = read_tsv(os.path.join(d, "latency.tsv"))
    paired = read_tsv(os.path.join(d, "paired.tsv"))
    meta = {r["key"]: r["value"] for r in read_tsv(os.path.join(d, "meta.tsv"))}
    summary = summarize(raw)
    md = []
    w = md.append
    w("# eoingest benchmark: latest results\n")
    w(f"Produced by `{meta.get('command', 'bench/run.sh')}` on {meta.get('date', '?')} "
      f"(wall time {meta.get('wall', '?')}).\n")
    w(f"- Machine: {meta.get('cpu_model', '?')}, {meta.get('cpus', '?')} CPUs, {meta.get('mem', '?')} RAM, "
      f"{meta.get('os', '')}")
    w(f"- eoingest: {meta.get('eoingest', '?')}")
    w(f"- PostgreSQL {meta.get('pg_version', '?')}, Kafka {meta.get('kafka_version', '?')} (one broker, "
      f"same machine), librdkafka {meta.get('librdkafka', '?')}, kcat {meta.get('kcat', '?')}")
    w(f"- Data: {fmt_int(fnum(meta.get('records')))} records, CSV messages of {meta.get('record_bytes')} bytes "
      f"(`{meta.get('sample_csv', '')}`), JSON messages of ~{meta.get('json_bytes')} bytes carrying the same "
      f"row; topics with 1 and 4 partitions; log end offsets checked after the preload")
    w(f"- Runs per variant: {meta.get('runs')} (median shown; naive consumer: "
      f"{meta.get('naive_records')} records); every run starts from a truncated table and a CHECKPOINT")
    w(f"- PostgreSQL settings: {meta.get('pg_settings', '')}\n")

    w("## Throughput\n")
    w("| variant | rows/s | × COPY | × COPY BINARY | CPU µs/row (all) | CPU µs/row (ingesting process) | Kafka broker "
      "CPU µs/row | WAL B/row | peak RSS MB (private / HWM) | other load (cores) | runs |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    copy_rate = {pk: (find(summary, method="copy", pk=pk) or {}).get("rate") for pk in ("no", "yes", "part")}
    binary_rate = {pk: (find(summary, method="copy_binary", pk=pk) or {}).get("rate") for pk in ("no", "yes", "part")}
    group = None
    for s in summary:
        if s["group"] != group:
            group = s["group"]
            w(f"| **{group.replace('|', chr(92) + '|')}** | | | | | | | | | | |")
        label = (s["label"] + pk_tag(s["pk"])).replace("|", "\\|")
        if not s.get("rate"):
            state = "not available" if s["na"] else "**FAILED**"
            w(f"| {label} | {state} | | | | | | | | | {s['note'][:160]} |")
            continue
        ratio = s["rate"] / copy_rate[s["pk"]] if copy_rate.get(s["pk"]) else None
        bratio = s["rate"] / binary_rate[s["pk"]] if binary_rate.get(s["pk"]) else None
        rss = "—"
        if s.get("rss_mb"):
            rss = f"{s['rss_mb']:.1f} / {s['hwm_mb']:.0f}" if s.get("hwm_mb") else f"{s['rss_mb']:.1f}"
        runs = f"{s['runs']}" + (f" (+{s['failed']} FAILED)" if s["failed"] else "")
        w(f"| {label} | {fmt_int(s['rate'])} | {fmt(ratio, 2 if ratio is None or ratio >= 0.1 else 4)} | "
          f"{fmt(bratio, 2 if bratio is None or bratio >= 0.1 else 4)} | {fmt(s['cpu_all_us'])} | "
          f"{fmt(s['cpu_proc_us'])} | {fmt(s['broker_us'])} | {fmt_int(s['wal_b'])} | {rss} | "
          f"{fmt(s['other_load'], 2)} | {runs} |")
    w("")
    w("Columns: *rows/s* = rows ÷ (start → commit of the last row, from `pg_xact_commit_timestamp`); "
      "*× COPY* = ratio to `COPY FROM` a CSV file on the same table (PK or not); *× COPY BINARY* = the same "
      "ratio to `COPY FROM` a file of the same rows in COPY's binary format (the second ceiling: no text "
      "parsing); *CPU µs/row (all)* = CPU "
      "of every PostgreSQL process (including the WAL writer, checkpointer, the bench's own short "
      "sessions) plus the client processes (kcat, psql, split, the naive consumer), the Kafka broker "
      "excluded; *(ingesting process)* = the eoingest worker(s), or the backend running COPY; "
      "*WAL B/row* = `pg_current_wal_lsn()` difference ÷ rows; *peak RSS* = the worker's largest "
      "RssAnon (private memory, polled every 0.1 s) / its VmHWM (which also counts the shared buffers it "
      "touched), the largest of the workers; for COPY the backend running it; — where not measured; "
      "*Kafka broker CPU* = the broker's CPU over the run (not in *all*); *other load* = CPU used by "
      "everything else on the machine during the run (busy time from /proc/stat minus PostgreSQL, the "
      "clients and the broker), in cores: another test run sharing the machine shows up here and "
      "makes that run noisier. *options* = librdkafka properties passed in the job's `options`.\n")

    if lat:
        w("## End-to-end latency\n")
        w("| job | batch_timeout_ms | rate (rows/s) | rows | p50 ms | p90 ms | p99 ms | max ms |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|")
        for l in lat:
            share = l.get('fraction', '1/2')
            share = f"{share} of the maximum: " if share != "-" else ""
            w(f"| {l['label']} | {l.get('batch_timeout_ms', '')} | {share}{fmt_int(fnum(l['rate']))} "
              f"(achieved {fmt_int(fnum(l['achieved']))}) | "
              f"{fmt_int(fnum(l['rows']))} | {fmt(fnum(l['p50_ms']))} | {fmt(fnum(l['p90_ms']))} | "
              f"{fmt(fnum(l['p99_ms']))} | {fmt(fnum(l['max_ms']))} |")
        w("")
        w("Latency = commit time of the row's transaction (`pg_xact_commit_timestamp(xmin)`, "
          "`track_commit_timestamp = on`) − the produce time the producer wrote into the message "
          "(its `ts` field, CLOCK_REALTIME µs, taken just before `rd_kafka_producev`). The commit "
          "timestamp is taken when the commit record is written, i.e. when the rows become visible; "
          "a `DEFAULT clock_timestamp()` column would give the insert time (before the commit) and "
          "`now()` the transaction start, both too early. The maximum is the median rate of "
          "exactly_once b=10000 par=1 above, measured from a backlog; here the producer and the "
          "broker share the machine's CPUs with the worker.\n")

    if paired:
        w("## COPY and exactly_once back to back\n")
        w("The table above measures COPY and eoingest minutes apart, and this machine's speed drifts. "
          "Here each round runs COPY, then exactly_once b=10000 with 1, 2 and 4 workers, into the same "
          "table (no PK), seconds apart.\n")
        w("| round | COPY rows/s | workers | exactly_once rows/s | × COPY | first rows after |")
        w("|---:|---:|---:|---:|---:|---:|")
        for r in paired:
            first = fnum(r.get("first_commit_s"))
            w(f"| {r['round']} | {fmt_int(fnum(r['copy_rows_per_s']))} | {r['par']} | "
              f"{fmt_int(fnum(r['eoingest_rows_per_s']))} | {fnum(r['ratio']):.2f} | "
              f"{fmt(first, 3) + ' s' if first is not None else '—'} |")
        w("")
        starts = [fnum(r.get("first_commit_s")) / fnum(r["seconds"]) for r in paired
                  if fnum(r.get("first_commit_s")) is not None and fnum(r.get("seconds"))]
        if starts:
            w(f"*First rows after*: from `start_job` to the job's first commit (the workers start, reach the "
              f"broker and take their first batch), part of each run's time: a median {med(starts) * 100:.0f}% "
              f"of it here. It is a fixed cost of starting a job, so it weighs less the more records a run "
              f"has (`--records`, `--big`).\n")
        curve = worker_curve(paired)
        if curve:
            w("### The curve over the workers\n")
            w("Medians over the rounds above. The workers and the broker share the machine's cores: "
              "*cores busy* = (PostgreSQL's CPU + the broker's CPU) ÷ the run's seconds; *broker share* = "
              "the broker's part of that CPU.\n")
            w("| workers | rows/s | × COPY | PostgreSQL CPU µs/row | broker CPU µs/row | broker share | "
              "cores busy |")
            w("|---:|---:|---:|---:|---:|---:|---:|")
            for c in curve:
                w(f"| {c['par']} | {fmt_int(c['rate'])} | {fmt(c['ratio'], 2)} | {fmt(c['server_us'], 2)} | "
                  f"{fmt(c['broker_us'], 2)} | {fmt(c['broker_share'] * 100 if c['broker_share'] is not None else None, 0)}% | "
                  f"{fmt(c['cores'], 2)} |")
            w("")
    w("## Targets\n")
    w("| target | measured | verdict |")
    w("|---|---|---|")
    for l in target_lines(summary, lat, paired):
        w(l)
    w("")
    for name, what in (("profile.txt", "exactly_once b=10000 par=1"),
                       ("profile-upsert.txt", "upsert (no conflicts) b=10000 par=1 [PK]")):
        prof = os.path.join(d, name)
        if not os.path.exists(prof):
            continue
        w(f"## Where the worker's time goes: {what}\n")
        w(f"`perf record` of the worker during one extra {what} run "
          f"(not counted above); full output in `{name}`.\n")
        with open(prof) as f:
            text = f.read()
        w("```")
        w(text.strip()[:6000])
        w("```\n")
    failed = [s for s in summary if s["failed"]]
    if failed:
        w("## FAILED runs\n")
        for s in failed:
            w(f"- {s['label']}: {s['failed']} run(s) failed: {s['note']}")
        w("")
    w("Raw per-run numbers: `raw.tsv` (seconds, CPU seconds, WAL bytes, RSS kB per run); "
      "latency: `latency.tsv`; settings: `meta.tsv`.")
    with open(os.path.join(d, "latest.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    if chart(summary, os.path.join(d, "latest.png"), meta):
        with open(os.path.join(d, "latest.md"), "a") as f:
            f.write("\n![throughput chart](latest.png)\n")
    return 0


def perf_fix(path, so_copy):
    """Name the eoingest.so addresses perf could not resolve (the library on disk was replaced
    while the server ran), from a copy of the library the server loaded, and add up the lines
    of the same function. Rewrites PATH (perf report --sort dso,symbol output)."""
    import re
    with open(path) as f:
        lines = f.read().splitlines()
    pat = re.compile(r"^\s*([0-9.]+)%\s+(eoingest\.so\S*(?: \(deleted\))?)\s+\[\.\]\s+(0x[0-9a-f]+)")
    addrs = sorted({m.group(3) for m in map(pat.match, lines) if m})
    names = {}
    if addrs and os.path.exists(so_copy):
        out = subprocess.run(["addr2line", "-f", "-e", so_copy] + addrs, capture_output=True, text=True).stdout
        fn = out.splitlines()[0::2]
        names = dict(zip(addrs, fn))
    merged, rest = {}, []
    for l in lines:
        m = pat.match(l)
        if m and names.get(m.group(3), "??") != "??":
            key = names[m.group(3)]
            merged[key] = merged.get(key, 0.0) + float(m.group(1))
        else:
            rest.append(l)
    out = [f"    {v:5.2f}%  eoingest.so            [.] {k}" for k, v in merged.items()]

    def pct(l):
        m = re.match(r"^\s*([0-9.]+)%", l)
        return float(m.group(1)) if m else -1.0
    body = sorted([l for l in rest if pct(l) >= 0] + out, key=pct, reverse=True)
    with open(path, "w") as f:
        f.write("\n".join([l for l in rest if pct(l) < 0] + body) + "\n")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = argv[1]
    if cmd == "server-cpu":
        print(f"{server_cpu(int(argv[2])):.2f}")
    elif cmd == "snap":
        print(f"{server_cpu(int(argv[2])):.2f} {machine_busy():.2f} {proc_cpu(int(argv[3]), children=True):.2f}")
    elif cmd == "cpu":
        print(f"{sum(proc_cpu(int(p)) for p in argv[2:]):.2f}")
    elif cmd == "hwm":
        print(max([vm_hwm(int(p)) for p in argv[2:]] or [0]))
    elif cmd == "timed":
        if len(argv) < 5 or argv[3] != "--":
            print(__doc__, file=sys.stderr)
            return 2
        return timed(argv[2], argv[4:])
    elif cmd == "perf-fix":
        perf_fix(argv[2], argv[3])
    elif cmd == "report":
        if len(argv) != 4 or argv[2] != "--dir":
            print(__doc__, file=sys.stderr)
            return 2
        return report(argv[3])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
