"""Command line of the generator.

  python3 -m kbgen generate [--root DIR] [--target NAME]...  write generated files under DIR
  python3 -m kbgen check [--root DIR]                          fail if committed files differ
  python3 -m kbgen symbols                                      print the public function names
  python3 -m kbgen model                                        print the model as JSON

Run from tools/kbgen (or with tools/kbgen on PYTHONPATH).  --header defaults to
core/include/kernelbridge.h under --root (default: the repository root).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys

from .emitters import all_emitters
from .parse import ParseError, parse_header

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HEADER = os.path.join("core", "include", "kernelbridge.h")


def _load(args):
    header = args.header or os.path.join(args.root, HEADER)
    display = os.path.relpath(header, args.root) if header.startswith(os.path.abspath(args.root)) else header
    return parse_header(header, display)


def _outputs(api, targets):
    files = {}
    for mod in all_emitters():
        if targets and mod.NAME not in targets:
            continue
        for path, text in mod.emit(api).items():
            if path in files:
                raise SystemExit(f"kbgen: two emitters write {path}")
            files[path] = text
    return files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="kbgen", description="kernelbridge binding generator")
    ap.add_argument("command", choices=["generate", "check", "symbols", "model", "targets"])
    ap.add_argument("--root", default=REPO_ROOT, help="repository root (default: %(default)s)")
    ap.add_argument("--header", help="header to read (default: ROOT/" + HEADER + ")")
    ap.add_argument("--out", help="with generate: write here instead of ROOT")
    ap.add_argument("--target", action="append", default=[], help="limit to these targets")
    args = ap.parse_args(argv)
    args.root = os.path.abspath(args.root)

    if args.command == "targets":
        print("\n".join(m.NAME for m in all_emitters()))
        return 0
    try:
        api = _load(args)
    except ParseError as e:
        print(str(e), file=sys.stderr)
        return 1

    if args.command == "symbols":
        print("\n".join(sorted(f.name for f in api.functions)))
        return 0
    if args.command == "model":
        print(json.dumps(api.to_json(), indent=1))
        return 0

    files = _outputs(api, args.target)
    if args.command == "generate":
        out = os.path.abspath(args.out or args.root)
        for path, text in sorted(files.items()):
            dest = os.path.join(out, path)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            old = None
            if os.path.exists(dest):
                with open(dest) as f:
                    old = f.read()
            if old != text:
                with open(dest, "w") as f:
                    f.write(text)
                print(f"kbgen: wrote {path}")
        return 0

    # check
    stale = 0
    for path, text in sorted(files.items()):
        dest = os.path.join(args.root, path)
        old = open(dest).read() if os.path.exists(dest) else ""
        if old != text:
            stale += 1
            print(f"kbgen: {path} is out of date; run: python3 -m kbgen generate (in tools/kbgen)", file=sys.stderr)
            diff = difflib.unified_diff(old.splitlines(), text.splitlines(), "committed/" + path, "generated/" + path, lineterm="", n=1)
            for i, line in enumerate(diff):
                if i >= 40:
                    print("...", file=sys.stderr)
                    break
                print(line, file=sys.stderr)
    print(f"kbgen: {len(files)} generated files checked, {stale} out of date")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
