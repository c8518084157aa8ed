#!/usr/bin/env python3
"""Figures from latte's JSON reports of a run.sh run.

  summarize.py --one REPORT.json              one line: throughput and latencies
  summarize.py --fixed-rate RUNS.csv WL FRAC  FRAC x the lower of the two servers'
                                              median saturation throughput for WL
  summarize.py --table RUNS.csv [...]         markdown tables, per round, with ratios
  summarize.py --csv RUNS.csv [...]           one CSV row per measured run
  summarize.py --compact RUNS.csv [...]       one row per round and workload, both servers
  summarize.py --slim REPORT.json [...]       drop the per-second histograms from latte's
                                              per-second log (its percentiles stay; the
                                              whole run's histograms stay), for keeping
"""
import csv
import gzip
import json
import os
import statistics
import sys

# Index of each percentile in latte's `percentiles` array (latte 0.29,
# src/stats/percentiles.rs: Min, 1, 2, 5, 10, 25, 50, 75, 90, 95, 98, 99, 99.9, 99.99, Max).
P50, P99, P999, MAX = 6, 11, 12, 14


def figures(path):
    # run.sh compresses the reports once a run is summarized.
    opener = (lambda: open(path)) if os.path.exists(path) else (lambda: gzip.open(path + ".gz", "rt"))
    with opener() as f:
        r = json.load(f)["result"]
    p = r["cycle_latency"]["percentiles"]
    return {
        "ops_per_s": r["cycle_throughput"]["value"],
        "p50_ms": p[P50]["value"],
        "p99_ms": p[P99]["value"],
        "p999_ms": p[P999]["value"],
        "max_ms": p[MAX]["value"],
        "errors": r["error_count"],
        "requests": r["request_count"],
        "rows_per_req": r.get("row_count_per_req"),
        "client_cpu_s": r["cpu_time_s"],
    }


def rows(meta_paths):
    out = []
    for meta in meta_paths:
        base = os.path.dirname(meta)
        with open(meta) as f:
            for m in csv.DictReader(f):
                if not m["report"]:
                    continue
                m.update(figures(os.path.join(base, m["report"])))
                m["server_cpu_us_per_op"] = (
                    float(m["server_cpu_s"]) * 1e6 / m["requests"] if m["requests"] else None)
                out.append(m)
    return out


def fixed_rate(meta, wl, frac):
    sat = [r for r in rows([meta]) if r["phase"] == "saturation" and r["workload"] == wl]
    medians = [statistics.median(r["ops_per_s"] for r in sat if r["server"] == s)
               for s in ("strata", "cassandra")]
    # Round to a hundred so the rate reads as chosen, not computed to the digit.
    return max(100, int(min(medians) * frac / 100) * 100)


def slim(path):
    with open(path) as f:
        report = json.load(f)
    for sample in report["result"]["log"]:
        for key in ("cycle_latency", "request_latency"):
            sample[key].pop("histogram", None)
        for dist in sample["cycle_latency_by_fn"].values():
            dist.pop("histogram", None)
    with open(path, "w") as f:
        json.dump(report, f)


def fmt(x, digits=2):
    return "-" if x is None else f"{x:,.{digits}f}"


def table(metas):
    rs = rows(metas)
    lines = []
    for mode in sorted({r["mode"] for r in rs}, key=lambda m: m != "periodic"):
        for phase in ("saturation", "fixed"):
            sel = [r for r in rs if r["mode"] == mode and r["phase"] == phase]
            if not sel:
                continue
            title = "saturation (no rate limit)" if phase == "saturation" else "fixed rate"
            lines += [f"### commit log `{mode}`: {title}", "",
                      "| round | workload | rate | server | ops/s | p50 ms | p99 ms | p99.9 ms "
                      "| server CPU µs/op | other server CPU s | load1 | errors |",
                      "|---|---|---|---|---|---|---|---|---|---|---|---|"]
            for r in sel:
                lines.append(
                    f"| {r['round']} | {r['workload']} | {r['rate'] or 'max'} | {r['server']} "
                    f"| {fmt(r['ops_per_s'], 0)} | {fmt(r['p50_ms'], 3)} | {fmt(r['p99_ms'], 3)} "
                    f"| {fmt(r['p999_ms'], 3)} | {fmt(r['server_cpu_us_per_op'], 1)} "
                    f"| {r['other_server_cpu_s']} | {r['load1']} | {r['errors']} |")
            lines += ["", "Strata / Cassandra, per round:", "",
                      "| round | workload | throughput | p50 | p99 | p99.9 | server CPU per op |",
                      "|---|---|---|---|---|---|---|"]
            for rnd in sorted({r["round"] for r in sel}):
                for wl in ("write", "read", "mix"):
                    s = [r for r in sel if r["round"] == rnd and r["workload"] == wl and r["server"] == "strata"]
                    c = [r for r in sel if r["round"] == rnd and r["workload"] == wl and r["server"] == "cassandra"]
                    if not s or not c:
                        continue
                    s, c = s[0], c[0]
                    ratio = lambda k: fmt(s[k] / c[k]) if s[k] and c[k] else "-"
                    lines.append(f"| {rnd} | {wl} | {ratio('ops_per_s')} | {ratio('p50_ms')} "
                                 f"| {ratio('p99_ms')} | {ratio('p999_ms')} | {ratio('server_cpu_us_per_op')} |")
            lines.append("")
    return "\n".join(lines)


def compact(metas):
    rs = rows(metas)
    lines = []
    for mode in sorted({r["mode"] for r in rs}, key=lambda m: m != "periodic"):
        for phase in ("saturation", "fixed"):
            sel = [r for r in rs if r["mode"] == mode and r["phase"] == phase]
            if not sel:
                continue
            title = "saturation" if phase == "saturation" else "fixed rate"
            lines += [f"**Commit log `{mode}`, {title}** (S = Strata, C = Cassandra; "
                      "latencies p50 / p99 / p99.9 in ms)", "",
                      "| round | workload | rate | S ops/s | C ops/s | S/C ops | S latency | C latency "
                      "| S/C p99 | CPU µs/op S / C | load1 S / C |",
                      "|---|---|---|---|---|---|---|---|---|---|---|"]
            for rnd in sorted({r["round"] for r in sel}):
                for wl in ("write", "read", "mix"):
                    pick = lambda srv: [r for r in sel if r["round"] == rnd and r["workload"] == wl
                                        and r["server"] == srv]
                    s, c = pick("strata"), pick("cassandra")
                    if not s or not c:
                        continue
                    s, c = s[0], c[0]
                    lat = lambda r: f"{r['p50_ms']:.2f} / {r['p99_ms']:.1f} / {r['p999_ms']:.0f}"
                    lines.append(
                        f"| {rnd} | {wl} | {s['rate'] or 'max'} | {s['ops_per_s']:,.0f} "
                        f"| {c['ops_per_s']:,.0f} | **{s['ops_per_s'] / c['ops_per_s']:.2f}** "
                        f"| {lat(s)} | {lat(c)} | **{s['p99_ms'] / c['p99_ms']:.2f}** "
                        f"| {s['server_cpu_us_per_op']:.0f} / {c['server_cpu_us_per_op']:.0f} "
                        f"| {float(s['load1']):.1f} / {float(c['load1']):.1f} |")
            lines.append("")
    return "\n".join(lines)


def main(argv):
    if argv[0] == "--one":
        f = figures(argv[1])
        print(f"{f['ops_per_s']:.0f} ops/s p50 {f['p50_ms']:.3f} p99 {f['p99_ms']:.3f} "
              f"p99.9 {f['p999_ms']:.3f} ms errors {f['errors']} rows/req {f['rows_per_req']}")
    elif argv[0] == "--fixed-rate":
        print(fixed_rate(argv[1], argv[2], float(argv[3])))
    elif argv[0] == "--table":
        print(table(argv[1:]))
    elif argv[0] == "--compact":
        print(compact(argv[1:]))
    elif argv[0] == "--slim":
        for path in argv[1:]:
            slim(path)
    elif argv[0] == "--csv":
        rs = rows(argv[1:])
        keys = ["mode", "phase", "round", "server", "workload", "rate", "ops_per_s", "p50_ms",
                "p99_ms", "p999_ms", "max_ms", "errors", "requests", "rows_per_req",
                "server_cpu_s", "server_cpu_us_per_op", "other_server_cpu_s", "client_cpu_s",
                "load1", "load5", "elapsed_s", "report"]
        w = csv.DictWriter(sys.stdout, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rs)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
