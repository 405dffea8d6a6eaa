#!/usr/bin/env python3
"""Cross-language conformance report (see docs/conformance.md).

    report.py [--corpus DIR] [--xfail-dir DIR] [--json PATH]
              [--runner LANG=EXECUTABLE ...] [--result FILE ...]

Each --runner is executed as `EXECUTABLE --corpus DIR --out FILE`; each
--result is a result file a runner already wrote.  The report re-validates
every golden case against the corpus tolerances (it does not trust a
runner's own "passed"), checks that every language's output hashes equal the
C runner's, checks the bad-input statuses, applies the expected-failure
lists, prints the kernel x language matrix and exits non-zero on any
failure.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def user_path(p):
    """Relative paths given on the command line are relative to where the user
    ran `bazel run` (BUILD_WORKING_DIRECTORY), or to the current directory."""
    if p is None or os.path.isabs(p):
        return p
    return os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd()), p)


def find_corpus(explicit):
    if explicit:
        cand = [explicit, user_path(explicit)]
    else:
        cand = [os.path.join(HERE, "corpus")]
        srcdir = os.environ.get("TEST_SRCDIR") or os.environ.get("RUNFILES_DIR")
        if srcdir:
            ws = os.environ.get("TEST_WORKSPACE", "kernelbridge")
            cand.append(os.path.join(srcdir, ws, "tests", "conformance", "corpus"))
    for c in cand:
        if c and os.path.isfile(os.path.join(c, "manifest.json")):
            return c
    sys.exit("report.py: no corpus found (tried %s)" % ", ".join(str(c) for c in cand))


def as_float(v):
    if isinstance(v, str):
        return math.inf if v.lower() in ("inf", "+inf", "infinity") else math.nan
    if v is None:
        return math.inf
    return float(v)


def fmt_ulp(v):
    if math.isinf(v) or math.isnan(v):
        return "inf"
    if v == int(v):
        return "%d" % v
    return "%.3g" % v


def json_ulp(v):
    return "inf" if (math.isinf(v) or math.isnan(v)) else v


def read_xfail(path):
    """'case-name  reason' lines; '#' starts a comment."""
    out = {}
    if not os.path.isfile(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, 1)
            out[parts[0]] = parts[1] if len(parts) > 1 else ""
    return out


def run_runners(runners, corpus, workdir):
    files = []
    for spec in runners:
        lang, _, exe = spec.partition("=")
        if not exe:
            sys.exit("report.py: --runner wants LANG=EXECUTABLE, got %r" % spec)
        out = os.path.join(workdir, lang + ".json")
        cmd = [exe, "--corpus", corpus, "--out", out]
        print("running %s runner: %s" % (lang, " ".join(cmd)), flush=True)
        proc = subprocess.run(cmd)
        # A runner exits 1 when something failed; the report decides.  Only a
        # missing result file is fatal for that language.
        if not os.path.isfile(out):
            print("  %s runner exited %d without writing %s" % (lang, proc.returncode, out))
            files.append((lang, None))
        else:
            files.append((lang, out))
    return files


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus")
    ap.add_argument("--xfail-dir")
    ap.add_argument("--json", dest="json_out")
    ap.add_argument("--runner", action="append", default=[])
    ap.add_argument("--result", action="append", default=[])
    args = ap.parse_args(argv)

    corpus = find_corpus(args.corpus)
    xfail_dir = user_path(args.xfail_dir) if args.xfail_dir else os.path.join(os.path.dirname(corpus), "xfail")
    with open(os.path.join(corpus, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    with open(os.path.join(corpus, "bad_input.json"), encoding="utf-8") as f:
        bad_corpus = json.load(f)
    tolerances = manifest["tolerances"]
    kernels = manifest["kernels"]
    cases = manifest["cases"]
    case_by_name = {c["name"]: c for c in cases}

    workdir = tempfile.mkdtemp(prefix="kb_conformance_")
    inputs = run_runners(args.runner, corpus, workdir)
    inputs += [(None, user_path(p)) for p in args.result]
    if not inputs:
        sys.exit("report.py: give at least one --runner or --result")

    failures = []
    results = {}  # language -> parsed result file
    for lang, path in inputs:
        if path is None:
            failures.append("%s: runner produced no result file" % lang)
            results[lang] = {"language": lang, "cases": [], "bad_input": [], "version": "?"}
            continue
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        lang = lang or data.get("language")
        if data.get("language") != lang:
            failures.append("%s: result file says language %r" % (path, data.get("language")))
        results[lang] = data
    languages = sorted(results, key=lambda l: (l != "c", l))
    if "c" not in results:
        failures.append("no C result: hashes cannot be compared (add --runner c=...)")
    versions = sorted({str(results[l].get("version")) for l in languages})
    if len(versions) > 1:
        failures.append("languages report different library versions: %s" % ", ".join(versions))
    backends = sorted({str(results[l].get("backend", "cpu")) for l in languages})

    c_hashes = {}
    if "c" in results:
        c_hashes = {r["name"]: r.get("hashes", {}) for r in results["c"].get("cases", [])}

    # Golden cases.
    cell = {}  # (kernel, lang) -> dict
    for lang in languages:
        xfail = read_xfail(os.path.join(xfail_dir, lang + ".txt"))
        got = {r["name"]: r for r in results[lang].get("cases", [])}
        for name in got:
            if name not in case_by_name:
                failures.append("%s: result for unknown case %s" % (lang, name))
        for case in cases:
            k, name = case["kernel"], case["name"]
            tol = case.get("tolerance", tolerances[k])  # a case's own bound overrides its kernel's
            c = cell.setdefault((k, lang), {"cases": 0, "passed": 0, "xfail": 0, "max_ulp": 0.0, "bitwise": True})
            c["cases"] += 1
            r = got.get(name)
            problems = []
            err = math.inf
            if r is None:
                problems.append("no result")
            elif r.get("status", "OK") != "OK" or r.get("na"):
                problems.append("status %s: %s" % (r.get("status"), r.get("error") or r.get("na") or ""))
            else:
                err = as_float(r.get("max_ulp"))
                if not err <= float(tol["ulp"]):
                    problems.append("max_ulp %s > %s" % (fmt_ulp(err), fmt_ulp(float(tol["ulp"]))))
                hashes = r.get("hashes", {})
                if sorted(hashes) != sorted(case["expected"]):
                    problems.append("hashes for %s, expected %s" % (sorted(hashes), sorted(case["expected"])))
                if lang != "c":
                    want = c_hashes.get(name)
                    if want is None or any(hashes.get(o) != want.get(o) for o in case["expected"]):
                        c["bitwise"] = False
                        problems.append("output bytes differ from C (%s vs %s)" % (hashes, want))
            if not (err <= c["max_ulp"]):
                c["max_ulp"] = err
            if "tolerance" in case:
                c["own_tolerance"] = True
            if not problems:
                c["passed"] += 1
                if name in xfail:
                    failures.append("%s %s: XPASS, remove it from xfail/%s.txt" % (lang, name, lang))
            elif name in xfail:
                c["xfail"] += 1
            else:
                failures.append("%s %s: %s" % (lang, name, "; ".join(problems)))
        for name in xfail:
            if name not in case_by_name and name not in {b["name"] for b in bad_corpus["cases"]}:
                failures.append("%s: xfail/%s.txt names unknown case %s" % (lang, lang, name))

    # Bad-input cases.
    bad_rows = []
    na_count = {}
    for lang in languages:
        xfail = read_xfail(os.path.join(xfail_dir, lang + ".txt"))
        got = {r["name"]: r for r in results[lang].get("bad_input", [])}
        for b in bad_corpus["cases"]:
            r = got.get(b["name"])
            if r is None:
                status, ok, why = "missing", False, "no result"
            elif r.get("got") == "n/a":
                status = "n/a"
                ok = bool(r.get("reason"))
                why = "n/a without a reason" if not ok else ""
                na_count[lang] = na_count.get(lang, 0) + 1
            else:
                status = r.get("got")
                ok = status == b["expected"] and r.get("untouched", True) is not False
                why = "" if ok else ("got %s" % status + ("" if r.get("untouched", True) else ", outputs modified"))
            if not ok and b["name"] in xfail:
                why = ""
            elif not ok:
                failures.append("%s bad input %s: expected %s, %s" % (lang, b["name"], b["expected"], why))
            elif ok and b["name"] in xfail and status != "n/a":
                failures.append("%s %s: XPASS, remove it from xfail/%s.txt" % (lang, b["name"], lang))
            bad_rows.append({"case": b["name"], "language": lang, "expected": b["expected"], "got": status, "ok": ok})

    # Print.
    width = max(len(k) for k in kernels) + 2
    print()
    print("kernelbridge conformance, library %s, backend %s" % (", ".join(versions), ", ".join(backends)))
    print("cell: passed/cases and the largest error in float32 ulps; last column: the tolerance")
    header = "kernel".ljust(width) + "".join(l.ljust(18) for l in languages) + "tolerance"
    print(header)
    print("-" * len(header))
    for k in kernels:
        row = k.ljust(width)
        for lang in languages:
            c = cell.get((k, lang))
            if c is None:
                row += "-".ljust(18)
                continue
            state = "ok" if c["passed"] == c["cases"] else ("xfail" if c["passed"] + c["xfail"] == c["cases"]
                                                             else "FAIL")
            row += ("%s %d/%d %s" % (state, c["passed"], c["cases"], fmt_ulp(c["max_ulp"]))).ljust(18)
        tol = tolerances[k]
        row += "%s ulp" % fmt_ulp(float(tol["ulp"])) + (", abs %g" % tol["abs"] if tol["abs"] else "")
        if any(cell.get((k, lang), {}).get("own_tolerance") for lang in languages):
            row += " (some cases: their own abs)"
        print(row)
    print()
    for lang in languages:
        rows = [r for r in bad_rows if r["language"] == lang]
        print("bad input, %s: %d/%d ok (%d n/a)" % (lang, sum(r["ok"] for r in rows), len(rows),
                                                    na_count.get(lang, 0)))
    bitwise = all(cell[(k, l)]["bitwise"] for (k, l) in cell if l != "c")
    if len(languages) > 1:
        print("all languages bit-identical to C: %s" % ("yes" if bitwise and "c" in results else "NO"))
    print()
    if failures:
        print("FAILURES (%d):" % len(failures))
        for f in failures:
            print("  " + f)
    else:
        print("conformance: all checks passed")

    if args.json_out:
        out = {
            "version": versions[0] if len(versions) == 1 else versions,
            "backend": "cpu",
            "languages": languages,
            "kernels": kernels,
            "results": [
                {
                    "kernel": k,
                    "language": lang,
                    "cases": cell[(k, lang)]["cases"],
                    "passed": cell[(k, lang)]["passed"],
                    "max_ulp": json_ulp(cell[(k, lang)]["max_ulp"]),
                    "bitwise_equal_to_c": cell[(k, lang)]["bitwise"] and "c" in results,
                }
                for k in kernels
                for lang in languages
                if (k, lang) in cell
            ],
            "bad_input": bad_rows,
        }
        path = user_path(args.json_out)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1, sort_keys=False)
            f.write("\n")
        print("wrote %s" % path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
