#!/usr/bin/env python3
"""The README checker's prose rule can fail: a one-digit edit of a figure a command prints, and a
figure with no line saying where it comes from, are both caught; cited figures, code spans, names
and generated blocks are left alone."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_readme as c  # noqa: E402

# A command of the "from" kind that prints a step, run through bash like a README pipeline.
PRINTS = "<!-- figures from: echo 'Step: 24.01 s (simulated), MFU 41%' | cat -->"


def failures_of(text):
    failures = []
    scratch = tempfile.mkdtemp(prefix="readme-test-")
    c.check_prose("doc.md", text.split("\n"), "/nonexistent-build", scratch, failures)
    return failures


def expect(name, text, count):
    got = failures_of(text)
    if len(got) != count:
        sys.exit(f"{name}: {len(got)} failures, expected {count}: {got}")


expect("the printed figures", f"{PRINTS}\nThe step takes 24.01 s at 41% MFU.", 0)
expect("a one-digit edit", f"{PRINTS}\nThe step takes 24.02 s at 41% MFU.", 1)
expect("a percentage edited", f"{PRINTS}\nThe step takes 24.01 s at 42% MFU.", 1)
expect("a rounding of the printed figure", f"{PRINTS}\nThe step takes 24.0 s.", 0)
expect("no line says where from", "The step takes 24.01 s.", 1)
expect("cited", "<!-- figures cited: a paper, Table 4 -->\nIt reports 41% MFU and 400.5 TFLOP/s.", 0)
expect("cited beside a command",
       "<!-- figures cited: 16 B x 7e9 = 104.3 GiB -->\n" + PRINTS + "\n104.3 GiB; the step 24.01 s.",
       0)
expect("code spans and names", "Run `--headroom 10%` on Llama 3.1 (Sec. 3.2) with GLM-4.5.", 0)
expect("a generated block", "<!-- accuracy:begin -->\nOff by 13.2% on average.\n<!-- accuracy:end -->",
       0)
expect("a table", f"{PRINTS}\n| plan | step |\n|---|---|\n| a | 24.03 s |", 1)
print("check_readme prose rule: 10 cases as expected")
