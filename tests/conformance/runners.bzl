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
