"""The conformance runners, one per language: the single list the report uses.

Every runner is an executable target that accepts
    --corpus DIR --out FILE
and writes the result JSON described in docs/conformance.md.  To add a
language, add its runner here; `bazel run //tests/conformance:report` then
builds it, runs it and puts it in the matrix (and its xfail list,
tests/conformance/xfail/<language>.txt, applies).
"""

CONFORMANCE_RUNNERS = {
    "c": "//tests/conformance:c_runner",
    "go": "//tests/conformance/runners/go:go_runner",
    "python": "//tests/conformance/runners/python:python_runner",
    "java": "//tests/conformance:java_runner",
    "rust": "//tests/conformance:rust_runner",
}

def runner_args(runners = CONFORMANCE_RUNNERS):
    """`--runner LANG=PATH` arguments for report.py, C first."""
    langs = [l for l in sorted(runners.keys()) if l == "c"] + [l for l in sorted(runners.keys()) if l != "c"]
    args = []
    for lang in langs:
        args += ["--runner", "%s=$(rootpath %s)" % (lang, runners[lang])]
    return args

def runner_data(runners = CONFORMANCE_RUNNERS):
    return sorted(runners.values())

def conformance_tests(runners = CONFORMANCE_RUNNERS, extra_data = []):
    """One sh_test per language, `<lang>_conformance_test`.

    Each runs the C runner and that language's runner through report.py
    (conformance_test.sh): `bazel test //...` thus fails on any failed case,
    bad-input disagreement, crash, warning or output that is not bit-identical
    to C's.  Runners that read sources outside their declared inputs (cargo,
    go) make the tests tagged "external" so Bazel never caches them.
    """
    for lang in sorted(runners.keys()):
        pairs = ["c"] if lang == "c" else ["c", lang]
        native.sh_test(
            name = lang + "_conformance_test",
            size = "small" if lang == "c" else "medium",
            srcs = ["conformance_test.sh"],
            args = ["%s=$(rootpath %s)" % (l, runners[l]) for l in pairs],
            data = sorted({runners[l]: None for l in pairs}.keys()) + [
                "report.py",
                ":corpus",
                ":xfail",
            ] + extra_data,
            tags = [] if lang == "c" else ["external"],
        )
