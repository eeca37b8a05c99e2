#!/usr/bin/env python3
"""Lists the longest function bodies in the project's C++ sources (lines from the signature to
the closing brace), longest first. Usage: tools/long_functions.py [N] [paths...]"""
import re
import sys
from pathlib import Path

SIGNATURE = re.compile(r"^[A-Za-z_][\w:<>,\s\*&~\[\]]*?\b([A-Za-z_~][\w:~]*)\s*\([^;]*$")


def functions(path):
    lines = path.read_text(errors="replace").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if SIGNATURE.match(line) and not line.startswith(("namespace", "struct", "class", "enum",
                                                          "using", "return", "#", "//", "TEST_CASE")):
            name = SIGNATURE.match(line).group(1)
            # find the opening brace of the body within a few lines
            j = i
            while j < len(lines) and j < i + 8 and "{" not in lines[j] and ";" not in lines[j]:
                j += 1
            if j < len(lines) and "{" in lines[j] and ";" not in lines[j].split("{")[0]:
                depth = 0
                k = j
                while k < len(lines):
                    depth += lines[k].count("{") - lines[k].count("}")
                    if depth <= 0 and k >= j:
                        break
                    k += 1
                yield name, i + 1, k - i + 1
                i = k + 1
                continue
        i += 1


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    roots = [Path(p) for p in sys.argv[2:]] or [Path("src")]
    found = []
    for root in roots:
        files = [root] if root.is_file() else sorted(root.rglob("*.cpp"))
        for f in files:
            for name, line, length in functions(f):
                found.append((length, f"{f}:{line}", name))
    for length, where, name in sorted(found, reverse=True)[:n]:
        print(f"{length:5d}  {name:40s} {where}")


if __name__ == "__main__":
    main()
