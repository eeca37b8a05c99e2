#!/usr/bin/env python3
"""The README runs as written: every shardplan and bench command in its ```sh blocks runs, and
every output it quotes is what the command prints today.

Usage: check_readme.py BUILD_DIR REPO [--update] [--file README.md]

Output blocks are the fenced blocks a command's output fills:
  * a plain ``` block whose first line is "$ COMMAND" (a transcript: the rest is its output);
  * a plain ``` block right after a line "<!-- output of: COMMAND -->".
A line "..." in an output block stands for any number of lines. --update rewrites the output
blocks with what the commands print now (review the diff as a golden-file change).

Commands run in a scratch directory that links the repository's top level, so relative paths
(tests/data/..., profiles/...) resolve and files a command writes (-o FILE, a trace into docs/,
which is copied) land outside the clone. `build/` in a command is BUILD_DIR. A ```sh command may end in "# exit N" when the
README shows it failing on purpose, and in "# needs a GPU" when it cannot run without one (it is
listed as not run on a machine without nvidia-smi).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

TIMEOUT_S = 600


def blocks(lines):
    """(start, end, info, directive) of every fenced block: lines[start] is the opening fence."""
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        prev = lines[i - 1] if i > 0 else ""
        d = re.match(r"^<!-- output of: (.*) -->\s*$", prev)
        out.append((i, j, m.group(1), d.group(1) if d else None))
        i = j + 1
    return out


def commands_of(body):
    """The shardplan / bench commands of a sh block, continuation lines joined."""
    cmds, cur = [], ""
    for line in body:
        if cur:
            cur += " " + line.strip()
        else:
            cur = line.strip()
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip()
            continue
        if cur.startswith("build/shardplan") or cur.startswith("build/bench/"):
            cmds.append(cur)
        cur = ""
    return cmds


def run(cmd, build, scratch):
    """Runs `cmd` as the README writes it; a pipeline or loop goes through bash."""
    expect = 0
    m = re.search(r"#\s*exit (\d+)", cmd)
    if m:
        expect = int(m.group(1))
    cmd = re.sub(r"\s+#.*$", "", cmd)
    if re.search(r"[|;]|\$\(", cmd):
        text = re.sub(r"(^|[\s(])build/", lambda g: g.group(1) + build + "/", cmd)
        r = subprocess.run(["bash", "-c", text], cwd=scratch,
                           capture_output=True, text=True, timeout=TIMEOUT_S)
        return r, expect
    argv = shlex.split(cmd)
    argv[0] = os.path.join(build, argv[0][len("build/"):])
    r = subprocess.run(argv, cwd=scratch, capture_output=True, text=True, timeout=TIMEOUT_S)
    return r, expect


def has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except OSError:
        return False


def matches(expected, actual):
    """expected may hold "..." lines, each any number of lines."""
    e = [l.rstrip() for l in expected]
    a = [l.rstrip() for l in actual]
    while a and not a[-1]:
        a.pop()
    while e and not e[-1]:
        e.pop()

    def go(i, j):
        if i == len(e):
            return j == len(a)
        if e[i] == "...":
            return any(go(i + 1, k) for k in range(j, len(a) + 1))
        return j < len(a) and e[i] == a[j] and go(i + 1, j + 1)

    return go(0, 0)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) < 2:
        sys.exit(__doc__)
    build, repo = os.path.abspath(args[0]), os.path.abspath(args[1])
    update = "--update" in sys.argv
    name = "README.md"
    if "--file" in sys.argv:
        name = sys.argv[sys.argv.index("--file") + 1]
    path = os.path.join(repo, name)
    lines = open(path).read().split("\n")
    scratch = tempfile.mkdtemp(prefix="readme-")
    for entry in os.listdir(repo):
        if entry.startswith("."):
            continue
        if entry == "docs":  # the README's commands write there (a trace): a copy, not the clone's
            shutil.copytree(os.path.join(repo, entry), os.path.join(scratch, entry), symlinks=True)
        else:
            os.symlink(os.path.join(repo, entry), os.path.join(scratch, entry))
    failures, ran, compared, skipped = [], 0, 0, []
    gpu = has_gpu()
    replacements = []
    for start, end, info, directive in blocks(lines):
        body = lines[start + 1:end]
        if info == "sh":
            for cmd in commands_of(body):
                # "# needs a GPU": runs where there is one; elsewhere counted as not run.
                if "# needs a GPU" in cmd and not gpu:
                    skipped.append(f"{name}:{start + 1}: `{cmd}` (no GPU here)")
                    continue
                ran += 1
                r, expect = run(cmd, build, scratch)
                if r.returncode != expect:
                    tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
                    failures.append(f"{name}:{start + 1}: `{cmd}` exited {r.returncode}, not "
                                    f"{expect}: " + " | ".join(tail))
            continue
        if info:
            continue
        if directive:
            cmd, expected, first = directive, body, start + 1
        elif body and body[0].startswith("$ "):
            cmd, expected, first = body[0][2:], body[1:], start + 2
            k = 0
            while cmd.endswith("\\") and k < len(expected):
                cmd = cmd[:-1].rstrip() + " " + expected[k].strip()
                k += 1
            expected, first = expected[k:], first + k
        else:
            continue
        compared += 1
        r, expect = run(cmd, build, scratch)
        actual = r.stdout.rstrip("\n").split("\n")
        if r.returncode != expect or not matches(expected, actual):
            if update:
                replacements.append((first, end, actual))
            else:
                k = 0
                while k < min(len(expected), len(actual)) and \
                        expected[k].rstrip() == actual[k].rstrip():
                    k += 1
                shown = expected[k] if k < len(expected) else "(nothing)"
                printed = actual[k] if k < len(actual) else "(nothing)"
                failures.append(f"{name}:{first + k + 1}: the output of `{cmd}` (exit "
                                f"{r.returncode}) is not what the README shows:\n"
                                f"  README: {shown}\n  prints: {printed}")
    if update and replacements:
        for first, end, actual in sorted(replacements, reverse=True):
            lines[first:end] = actual
        open(path, "w").write("\n".join(lines))
        print(f"rewrote {len(replacements)} output block(s) of {name}")
    print(f"{name}: {ran} commands run, {compared} outputs compared, {len(failures)} failures, "
          f"{len(skipped)} not run for want of a GPU")
    for k in skipped:
        print("  not run: " + k)
    for f in failures:
        print(f)
    sys.exit(1 if failures and not update else 0)


if __name__ == "__main__":
    main()
