#!/usr/bin/env python3
"""The real-data benchmark: shardopt's Newton-CG against LIBLINEAR 2.50 (the newest release, built
from ../shared/peers/liblinear-2.50 into build/peers) and Debian's LIBLINEAR 2.3, on real sparse sets
(bench/real_sets.py: Debian's package descriptions, WordNet glosses, the SpamAssassin corpus, hashed
words and word pairs or character n-grams) and on generated ones (`shardopt generate`), each with
weak (C = 1, lambda = 1/n) and strong (C = 0.01) L2 regularisation. Sets are made on first use in
build/bench-data and kept.

Every run is timed end to end (load, setup, solve) to LIBLINEAR 2.50's final objective (to 12
digits: REACHED_RTOL), computed exactly under shardopt's normalisation, f = mean loss + lambda/2 ||w||^2 (LIBLINEAR's f / (C n)).
Every run has its large blocks on transparent huge pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1:
shardopt sets it for itself, LIBLINEAR gains from it too), or none with --huge-pages off.
With --bias none (the default) shardopt runs with --no-bias and LIBLINEAR without -B: the same
problem. With --bias fit shardopt fits its unregularised bias, which can only lower its optimum, and
the L1 runs give LIBLINEAR -B 1000 (a bias whose penalty is |b| / 1000). Runs, one after the other:
  LIBLINEAR 2.50 -s 0 (1 core); LIBLINEAR 2.3 -s 0 (1 core); shardopt with 1 shard pinned to one
  core (taskset; its reader then parses with one thread too); shardopt with 2 shards; shardopt with
  2 shards from the binary dataset (`shardopt convert`), whose setup is compared with the text parse
  (and its load and setup with the text's, the time each takes to its first pass).

Columns: load, setup and solve seconds; Newton steps and Hessian-vector products to the objective
(LIBLINEAR's from its log); ns per non-zero per pass (solve seconds / (passes x non-zeros), a
pass being an evaluation or a product); the driver's serial seconds per pass (the solve's time
outside the rounds that wait for the shards, over the whole run); peak RSS; ratios to LIBLINEAR
2.50's end-to-end time and RSS. LIBLINEAR's load is its run stopped after its first evaluations
(-e 1e30) less those passes.

    /usr/bin/python3 bench/real_bench.py BUILD/apps/shardopt [--sets debian-en,...] [--reg weak,strong]
        [--l1 [--liblinear-eps E]] [--bias none|fit] [--huge-pages on|off] [--repeat N] [--out FILE]
        (default: bench/results/real.json, or real_l1.json with --l1, real_l1_eE.json with --liblinear-eps E)

With --l1 --liblinear-eps E, LIBLINEAR runs with -e E and every run is timed to its objective
there; a shardopt run that stops above it (a failed line search, its iteration limit) is a row
marked not reached, timed as the others are (load, setup and solve from its summary).
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_sets  # noqa: E402
from sparse_bench import launched, launched_report, liblinear_250, timed_rss  # noqa: E402

# Generated sets: rows, features, non-zeros a row (>= 100 million non-zeros each).
GENERATED = {
    "generated-2^20": {"rows": 2500000, "features": 1 << 20, "nonzeros": 40, "seed": 11},
    "generated-2^22": {"rows": 2500000, "features": 1 << 22, "nonzeros": 40, "seed": 12},
    "generated-2^24": {"rows": 5000000, "features": 1 << 24, "nonzeros": 20, "seed": 13},
}
REAL = list(real_sets.SETS)
REGULARISATION = {"weak": 1.0, "strong": 0.01}  # LIBLINEAR's C
def dataset(binary, name, folder):
    """The set's LIBSVM file, binary dataset and description, made when missing."""
    if name in GENERATED:
        spec = GENERATED[name]
        text = os.path.join(folder, f"{name}.svm")
        if not os.path.exists(text):
            subprocess.run([binary, "generate", "-o", text, "--rows", str(spec["rows"]), "--features",
                            str(spec["features"]), "--nonzeros", str(spec["nonzeros"]), "--seed",
                            str(spec["seed"]), "--quiet"], check=True)
        meta = {"name": name, "rows": spec["rows"], "features": spec["features"],
                "nonzeros": spec["rows"] * spec["nonzeros"], "source": "generated"}
    else:
        text, meta = real_sets.build(name, os.path.join(folder, "real"))
    cache = text[:-4] + ".shoptbin"
    if not os.path.exists(cache) or os.path.getmtime(cache) < os.path.getmtime(text):
        subprocess.run([binary, "convert", "--data", text, "-o", cache, "--features", str(meta["features"])],
                       check=True, capture_output=True)
    return text, cache, meta


def run_liblinear(train, label, meta, c, text, cache, scratch, newest, l1=False, bias=False, eps=None):
    model = os.path.join(scratch, "liblinear.model")
    # L1 against shardopt's bias: -B 1000, a bias whose penalty is |b| / 1000, as
    # tests/apps/commands/train/l1_vs_liblinear.py has it (shardopt's bias is unpenalised; without one
    # LIBLINEAR's optimum is far above shardopt's on skewed labels).
    command = ([train, "-s", "6"] + (["-B", "1000"] if bias else []) + ["-c", repr(c)] if l1
               else [train, "-s", "0", "-c", repr(c)])
    command += ["-e", repr(eps)] if eps is not None else []
    seconds, rss, out, _ = timed_rss(command + [text, model])
    if l1:  # newGLMNET: Newton steps whose inner coordinate descent needs no Hessian-vector product;
        # its passes, as sparse_bench counts them: a gradient pass per step and its CD cycles
        cycles = [int(n) for n in re.findall(r"^iter\s+\d+\s+#CD cycles\s+(\d+)", out, re.M)]
        steps = cycles
        spec = {"model": "logistic", "lambda": 0.0, "l1": 1.0 / (c * meta["rows"])}
        return {"tool": label, "end_to_end": seconds, "load": 0.0, "setup": 0.0, "solve": seconds,
                "steps": len(steps), "products": 0, "passes": 1 + sum(n + 1 for n in cycles), "rss": rss,
                "objective": objective_of(model, cache, spec), "serial_per_pass": None,
                "nonzeros": nonzero_weights(model)}
    steps = re.findall(r"^iter\s+\d+.*?CG\s+(\d+)", out, re.M)
    products = sum(int(cg) for cg in steps)
    # 2.50 evaluates f and g at w = 0 and at the start (the same point: 2 passes), then a step
    # costs half a pass each for its diagonal preconditioner, X s and the gradient; 2.3 (TRON) one
    # evaluation at the start and a step.
    passes = products + (1.5 * len(steps) + 2 if newest else len(steps) + 1)
    first, _, _, _ = timed_rss(command + ["-e", "1e30", text, os.path.join(scratch, "once.model")])
    pass_seconds = max(seconds - first, 0.0) / max(passes - 2, 1)
    load = max(first - 2 * pass_seconds, 0.0)
    objective = objective_of(model, cache, {"model": "logistic", "lambda": 1.0 / (c * meta["rows"])})
    return {"tool": label, "end_to_end": seconds, "load": load, "setup": 0.0, "solve": seconds - load,
            "steps": len(steps), "products": products, "passes": passes, "rss": rss,
            "objective": objective, "serial_per_pass": None}


# An iterate reaches LIBLINEAR's objective when it is at most that to 12 digits: the same iterate
# evaluated by LIBLINEAR's weights (saved to 17 digits, summed in another order) and by shardopt's
# exact sums differs by about 1e-15 relative, and without this margin a tie becomes a step more
# (generated-2^24: shardopt's second iterate was LIBLINEAR's to its printed digits). A Newton step
# near the end changes the objective by 1e-9 relative or more.
REACHED_RTOL = 1e-12


def reaches(row, target):
    return row["objective"] <= target + REACHED_RTOL * abs(target)


def run_to(command, metrics, target, stop=False):
    """Runs shardopt (through sparse_bench's launcher, for its own peak RSS); with `stop`, ends it
    (SIGKILL) once its metrics reach `target`. Returns (wall seconds, peak RSS bytes, stdout, the
    metrics rows)."""
    if os.path.exists(metrics):
        os.remove(metrics)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r") as report:
        started = time.monotonic()
        process = subprocess.Popen(launched(command, report.name), stdout=out, stderr=err)
        killed = False
        while process.poll() is None:
            time.sleep(0.2)
            if stop and not killed and any(reaches(row, target) for row in read_rows(metrics)):
                child, _ = launched_report(report.name)
                if child:
                    try:
                        os.kill(child, signal.SIGKILL)  # the launcher then reports its peak and exits
                        killed = True
                    except ProcessLookupError:
                        pass  # it ended on its own as the target came: its summary stands
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
        _, rss = launched_report(report.name)
    if (process.returncode != 0 and not killed) or rss is None:
        sys.exit(f"real_bench: {' '.join(command)} failed:\n{stderr}")
    return seconds, rss, "" if killed else stdout, read_rows(metrics)


def read_rows(metrics):
    rows = []
    if os.path.exists(metrics):
        with open(metrics) as f:
            for line in f:
                if line.endswith("\n"):
                    rows.append(json.loads(line))
    return rows


def objective_of(model, cache, spec):
    """LIBLINEAR's model's objective under shardopt's normalisation, computed exactly."""
    return float(subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                              "sparse_bench.py"),
                                 "--objective", model, cache, spec["model"], repr(spec["lambda"]),
                                 repr(spec.get("l1", 0.0))], check=True, capture_output=True, text=True).stdout)


def nonzero_weights(model):
    with open(model) as f:
        lines = f.read().split("\n")
    weights = [float(line.split()[0]) for line in lines[lines.index("w") + 1:] if line.strip()]
    if any(line.startswith("bias ") and float(line.split()[1]) > 0 for line in lines):
        weights = weights[:-1]
    return sum(1 for w in weights if w != 0)


def run_shardopt(binary, label, meta, c, data, target, shards, pinned, scratch, l1=False, solver="newton-cg",
                 bias=False, extra=()):
    metrics = os.path.join(scratch, "metrics.jsonl")
    penalty = (["--lambda", "0", "--l1", repr(1.0 / (c * meta["rows"])), "--epsilon", "1e-9"] if l1 else
               ["--lambda", repr(1.0 / (c * meta["rows"])), "--epsilon", "1e-12"])
    penalty += [] if bias else ["--no-bias"]
    command = (["taskset", "-c", "0"] if pinned else []) + [
        binary, "train", "--model", "logistic", "--data", data, "--scale", "none", "--features",
        str(meta["features"]), *penalty, "--solver", solver, "--max-iter", "300" if solver == "newton-cg" else "3000",
        "--shards", str(shards), "--metrics", metrics, "--json", "--quiet", *extra]
    seconds, rss, out, rows = run_to(command, metrics, target, stop=l1)
    reached = next((row for row in rows if reaches(row, target)), None)
    if reached is None and l1 and out.strip():
        # An L1 run that stops above the target (a failed line search, its iteration limit) is a
        # row of the table, not the end of the benchmark: its last iterate and why it stopped.
        summary = json.loads(out)
        return {"tool": label,
                "end_to_end": summary["load_seconds"] + summary["setup_seconds"] + summary["seconds"],
                "load": summary["load_seconds"],
                "setup": summary["setup_seconds"], "solve": summary["seconds"], "steps": summary["iterations"],
                "products": summary["hessian_products"], "passes": summary["passes"], "rss": rss,
                "objective": summary["objective"], "serial_per_pass": None, "process_seconds": seconds,
                "nonzeros": summary.get("nonzero_weights"), "reached": False,
                "stop_reason": summary["stop_reason"]}
    if reached is None:
        summary = json.loads(out)
        sys.exit(f"real_bench: {label} never reached LIBLINEAR 2.50's objective {target!r} "
                 f"({summary['objective']!r}, {summary['stop_reason']})")
    # A run stopped at the target prints no summary: its load and setup are those of the same run
    # stopped after one iteration (on a page cache the first run warmed: a slight underestimate).
    if out.strip():
        summary = json.loads(out)
    else:
        once = list(command)
        once[once.index("--max-iter") + 1] = "1"
        _, _, first_out, _ = run_to(once, metrics, target)
        summary = {key: value for key, value in json.loads(first_out).items() if key in ("load_seconds", "setup_seconds")}
    passes = reached["evaluations"] + reached["hessian_products"]
    serial = None
    if "round_seconds" in summary:
        total_passes = summary["evaluations"] + summary["hessian_products"]
        serial = max(summary["seconds"] - summary["round_seconds"], 0.0) / max(total_passes, 1)
    load, setup = summary["load_seconds"], summary["setup_seconds"]
    first = rows[0]["seconds"] if rows else 0.0
    return {"tool": label, "end_to_end": load + setup + reached["seconds"],
            "load": load, "setup": setup, "solve": reached["seconds"],
            "steps": reached["iteration"], "products": reached["hessian_products"], "passes": passes,
            "rss": rss, "objective": reached["objective"], "serial_per_pass": serial,
            "first_iteration": summary["setup_seconds"] + first, "process_seconds": seconds,
            "nonzeros": reached.get("nonzero_weights"), "reached": True}


def repeated(configs, times):
    """Runs every configuration (a function of LIBLINEAR 2.50's objective, the first's) `times`
    times in turn (all of them, then all again: a drift of the machine's speed touches each alike)
    and keeps each one's run of median end-to-end time (the lower middle for an even count), with
    every run's time in `end_to_end_runs`."""
    rounds = []
    target = None
    for _ in range(times):
        rows = []
        for config in configs:
            rows.append(config(target))
            target = rows[0]["objective"] if target is None else target
        rounds.append(rows)
    kept = []
    for runs in zip(*rounds):
        ordered = sorted(runs, key=lambda row: row["end_to_end"])
        row = dict(ordered[(len(ordered) - 1) // 2])
        row["end_to_end_runs"] = [run["end_to_end"] for run in runs]
        kept.append(row)
    return kept


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--sets", default=",".join(REAL + list(GENERATED)))
    parser.add_argument("--reg", default="weak,strong")
    parser.add_argument("--data", default="build/bench-data")
    parser.add_argument("--build", default="build")
    parser.add_argument("--out")
    parser.add_argument("--l1", action="store_true",
                        help="L1-regularised logistic regression (no L2; C as --reg says, alpha = 1/(C n)): "
                             "LIBLINEAR -s 6 against shardopt's orthant-wise Newton-CG, OWL-QN as the control")
    parser.add_argument("--liblinear-eps", type=float,
                        help="with --l1: LIBLINEAR's stopping tolerance (-e; its default 0.01 stops far from the "
                             "optimum on some sets), whose objective every run is timed to; a shardopt run that "
                             "stops above it is a row marked not reached")
    parser.add_argument("--bias", choices=("none", "fit"), default="none",
                        help="none: shardopt --no-bias, LIBLINEAR without -B (the same problem); fit: shardopt's "
                             "unpenalised bias (and LIBLINEAR -s 6 -B 1000)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run every tool this many times, in turn, and keep each one's median end-to-end run "
                             "(every run's time is in the JSON's end_to_end_runs)")
    parser.add_argument("--huge-pages", choices=("on", "off"), default="on",
                        help="on: every run (LIBLINEAR's too) with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, its large "
                             "blocks on transparent huge pages, as shardopt starts itself; off: no run on them")
    options = parser.parse_args()
    if options.repeat < 1:
        parser.error("--repeat must be 1 or more")
    known = REAL + list(GENERATED)
    for name in options.sets.split(","):
        if name not in known:
            parser.error(f"--sets: unknown set '{name}' (expected some of {', '.join(known)})")
    for reg in options.reg.split(","):
        if reg not in REGULARISATION:
            parser.error(f"--reg: unknown regularisation '{reg}' (expected weak or strong, or both: weak,strong)")
    if options.liblinear_eps is not None and not options.l1:
        parser.error("--liblinear-eps takes --l1 (the L2 runs are timed to LIBLINEAR's default objective)")
    if options.liblinear_eps is not None and not options.liblinear_eps > 0:
        parser.error("--liblinear-eps must be positive")
    # The same memory for every tool: shardopt restarts itself on huge pages unless GLIBC_TUNABLES
    # is set, so it is set here for all (tunables of the user's own are kept, for all alike), or
    # SHARDOPT_HUGE_PAGES=0 and none for any.
    if options.huge_pages == "on":
        os.environ.setdefault("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")
        os.environ.pop("SHARDOPT_HUGE_PAGES", None)
    else:
        os.environ.pop("GLIBC_TUNABLES", None)
        os.environ["SHARDOPT_HUGE_PAGES"] = "0"
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            thp = f.read().strip()
    except OSError:
        thp = "unknown"
    memory = {"tunables": os.environ.get("GLIBC_TUNABLES", ""), "transparent_hugepage": thp,
              "glibc": os.confstr("CS_GNU_LIBC_VERSION")}
    options.out = options.out or ("bench/results/real.json" if not options.l1 else "bench/results/real_l1.json"
                                  if options.liblinear_eps is None else f"bench/results/real_l1_e{options.liblinear_eps:g}.json")
    scratch = os.path.join(options.data, "scratch")
    os.makedirs(scratch, exist_ok=True)
    newest = liblinear_250(options.build)
    results = []
    for name in options.sets.split(","):
        text, cache, meta = dataset(options.binary, name, options.data)
        for reg in options.reg.split(","):
            c = REGULARISATION[reg]
            if options.l1:
                results.append(l1_set(options, newest, meta, reg, c, text, cache, scratch))
                print_l1_set(results[-1])
                continue
            configs = [lambda target: run_liblinear(newest, "LIBLINEAR 2.50 (1 core)", meta, c, text, cache, scratch,
                                                    True),
                       lambda target: run_liblinear("liblinear-train", "LIBLINEAR 2.3 (1 core)", meta, c, text, cache,
                                                    scratch, False)]
            for label, data, shards, pinned in (("shardopt, 1 shard (1 core)", text, 1, True),
                                                ("shardopt, 2 shards (2 cores)", text, 2, False),
                                                ("shardopt, 2 shards, binary dataset", cache, 2, False)):
                configs.append(lambda target, label=label, data=data, shards=shards, pinned=pinned: run_shardopt(
                    options.binary, label, meta, c, data, target, shards, pinned, scratch, bias=options.bias == "fit"))
            runs = repeated(configs, options.repeat)
            peer = runs[0]
            for row in runs:
                row["ns_per_nnz_pass"] = row["solve"] / (max(row["passes"], 1) * meta["nonzeros"]) * 1e9
                row["time_ratio"] = row["end_to_end"] / peer["end_to_end"]
                row["rss_ratio"] = row["rss"] / peer["rss"]
            text_two, binary_two = runs[3], runs[4]
            results.append({"set": meta, "regularisation": reg, "C": c, "lambda": 1.0 / (c * meta["rows"]),
                            "bias": options.bias, "huge_pages": options.huge_pages,
                            "liblinear_objective": peer["objective"], "runs": runs,
                            # The target: the setup after the binary dataset loads over the text's
                            # parse. Beside it, the time to the first pass (load and setup) of each,
                            # and the first Newton iteration's passes added (solve work, not setup).
                            "binary_setup_over_text_parse": binary_two["setup"] / text_two["load"],
                            "binary_start_over_text_start": (binary_two["load"] + binary_two["setup"])
                                                            / (text_two["load"] + text_two["setup"]),
                            "binary_first_iteration_over_text_parse": binary_two["first_iteration"]
                                                                      / text_two["load"],
                            "two_core_speedup": runs[2]["solve"] / text_two["solve"]})
            print_set(results[-1])
    date = time.strftime("%Y-%m-%d")
    os.makedirs(os.path.dirname(os.path.abspath(options.out)), exist_ok=True)
    with open(options.out, "w") as f:
        json.dump({"date": date, "memory": memory, "results": results}, f, indent=2)
    if options.l1:
        print(f"\nreal-data L1 benchmark, {date}: targets 1 core <= 1.0x LIBLINEAR 2.50 -s 6, 2 cores <= 0.55x, "
              f"non-zeros within 1% at the same objective")
        print(f"written to {options.out}")
        return
    print(f"\nreal-data benchmark, {date}: targets 1 core <= 1.0x LIBLINEAR 2.50 end to end, 2 cores <= 0.55x, "
          f"RSS <= 1.0x; 2 cores >= 1.8x one from 50 million non-zeros; binary setup <= 0.1x the text parse")
    print(f"written to {options.out}")


def l1_set(options, newest, meta, reg, c, text, cache, scratch):
    """One set's L1 runs: LIBLINEAR 2.50 and 2.3 -s 6, shardopt (Newton-CG) on 1 core and 2 shards,
    OWL-QN (--solver auto's, with shrinking) on 1 core and 2 shards, and plain OWL-QN (--no-shrinking,
    the control) on 1 core, each to LIBLINEAR 2.50's objective."""
    bias = options.bias == "fit"
    eps = options.liblinear_eps
    configs = [lambda target: run_liblinear(newest, "LIBLINEAR 2.50 -s 6 (1 core)", meta, c, text, cache, scratch,
                                            True, l1=True, bias=bias, eps=eps),
               lambda target: run_liblinear("liblinear-train", "LIBLINEAR 2.3 -s 6 (1 core)", meta, c, text, cache,
                                            scratch, False, l1=True, bias=bias, eps=eps)]
    for label, shards, pinned, solver, extra in (
            ("shardopt Newton-CG, 1 shard (1 core)", 1, True, "newton-cg", ()),
            ("shardopt Newton-CG, 2 shards (2 cores)", 2, False, "newton-cg", ()),
            ("shardopt OWL-QN, 1 shard (1 core)", 1, True, "owlqn", ()),
            ("shardopt OWL-QN, 2 shards (2 cores)", 2, False, "owlqn", ()),
            ("OWL-QN --no-shrinking, 1 shard (1 core)", 1, True, "owlqn", ("--no-shrinking",))):
        configs.append(lambda target, label=label, shards=shards, pinned=pinned, solver=solver, extra=extra:
                       run_shardopt(options.binary, label, meta, c, text, target, shards, pinned, scratch, l1=True,
                                    solver=solver, bias=bias, extra=extra))
    runs = repeated(configs, options.repeat)
    peer = runs[0]
    for row in runs:
        row["time_ratio"] = row["end_to_end"] / peer["end_to_end"]
        row["rss_ratio"] = row["rss"] / peer["rss"]
    return {"set": meta, "regularisation": reg, "C": c, "l1": 1.0 / (c * meta["rows"]), "lambda": 0.0,
            "bias": options.bias, "huge_pages": options.huge_pages, "liblinear_eps": eps,
            "liblinear_objective": peer["objective"], "runs": runs}


def print_l1_set(result):
    meta = result["set"]
    print(f"\n{meta['name']}: {meta['rows']:,} rows x {meta['features']:,} features, {meta['nonzeros']:,} "
          f"non-zeros; L1 {result['regularisation']} (C = {result['C']:g}, alpha = {result['l1']:.3g}, no L2; "
          f"bias: {result['bias']}; huge pages: {result['huge_pages']}); "
          f"LIBLINEAR 2.50's objective (-e {result['liblinear_eps'] or 'default'}) "
          f"{result['liblinear_objective']:.10g}")
    print(f"{'run':<40} {'steps':>5} {'passes':>6} {'Hv':>5} {'non-zeros':>9} {'RSS GB':>7} {'total s':>8} "
          f"{'vs 2.50':>7}")
    target = result["liblinear_objective"]
    for row in result["runs"]:
        missed = "" if row.get("reached", True) else (
            f"  not reached: {row['stop_reason']}, objective {(row['objective'] - target) / abs(target):+.2e} "
            f"relative")
        print(f"{row['tool']:<40} {row['steps']:>5} {row['passes']:>6} {row['products']:>5} {row['nonzeros']:>9} "
              f"{row['rss'] / 1e9:>7.2f} {row['end_to_end']:>8.2f} {row['time_ratio']:>7.2f}{missed}")


def print_set(result):
    meta = result["set"]
    print(f"\n{meta['name']}: {meta['rows']:,} rows x {meta['features']:,} features, {meta['nonzeros']:,} "
          f"non-zeros ({meta['nonzeros'] / meta['rows']:.1f} a row); {result['regularisation']} "
          f"(C = {result['C']:g}, lambda = {result['lambda']:.3g}); shardopt's bias: {result['bias']}; "
          f"huge pages: {result['huge_pages']}; "
          f"LIBLINEAR 2.50's objective "
          f"{result['liblinear_objective']:.10g}")
    print(f"{'run':<36} {'load s':>7} {'setup s':>7} {'solve s':>8} {'steps':>5} {'Hv':>5} {'ns/nnz/pass':>11} "
          f"{'serial ms/pass':>14} {'RSS GB':>7} {'total s':>8} {'vs 2.50':>7} {'RSS vs':>6}")
    for row in result["runs"]:
        serial = "" if row["serial_per_pass"] is None else f"{row['serial_per_pass'] * 1e3:.1f}"
        print(f"{row['tool']:<36} {row['load']:>7.2f} {row['setup']:>7.2f} {row['solve']:>8.2f} {row['steps']:>5} "
              f"{row['products']:>5} {row['ns_per_nnz_pass']:>11.2f} {serial:>14} {row['rss'] / 1e9:>7.2f} "
              f"{row['end_to_end']:>8.2f} {row['time_ratio']:>7.2f} {row['rss_ratio']:>6.2f}")
    print(f"{'':<36} 2 cores' speedup over 1: {result['two_core_speedup']:.2f}x; binary dataset's setup over the "
          f"text parse: {result['binary_setup_over_text_parse']:.3f} (load and setup over the text's: "
          f"{result['binary_start_over_text_start']:.3f}; with the first iteration: "
          f"{result['binary_first_iteration_over_text_parse']:.3f})")


if __name__ == "__main__":
    main()
