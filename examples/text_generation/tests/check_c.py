"""Checks the C text-generation driver against the committed references
(references.py: testdata/references.json and logits_*.npz, made by
transformers and llama.cpp; see testdata/README.md).

    check_c.py PATH_TO_GENERATE
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import references  # noqa: E402


def main():
    references.check_references([os.path.abspath(sys.argv[1])])
    return references.report()


if __name__ == "__main__":
    sys.exit(main())
