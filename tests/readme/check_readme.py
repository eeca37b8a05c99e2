#!/usr/bin/env python3
"""The README runs as written: every shardplan and bench command in its ```sh blocks runs, and
every output it quotes is what the command prints today.

Usage: check_readme.py BUILD_DIR REPO [--update] [--file README.md]

Output blocks are the fenced blocks a command's output fills:
  * a plain ``` block whose first line is "$ COMMAND" (a transcript: the rest is its output);
  * a plain ``` block right after a line "<!-- output of: COMMAND -->".
A line "..." in an output block stands for any number of lines. --update rewrites the output
blocks with what the commands print now (review the diff as a golden-file change).

Figures in prose are held to the same rule. A paragraph right after one or more lines
"<!-- figures from: COMMAND -->" quotes what those commands print: every figure in it (a number
with a decimal point, or a percentage; code spans are inputs and left out) must appear, as a
number of its own, in their output (stdout and stderr). A paragraph whose figures come from
elsewhere says so with "<!-- figures cited: SOURCE -->" (a paper, a table) or "<!-- figures
measured: HOW -->" (a timing taken by hand); beside a "from" line, the figures such a line
quotes are exempt from the command's output. A prose paragraph with figures and none of these
lines is a failure, so a figure cannot be added without saying where it comes from; a block
another tool generates ("<!-- NAME:begin -->" .. "<!-- NAME:end -->", compared by its own test)
is left to that test.

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


# A figure in prose: a number with a decimal point or a percentage (thousands commas allowed).
FIGURE = re.compile(r"(?<![\w.,])[-+]?\d{1,3}(?:,\d{3})*(?:\.\d+)?%|(?<![\w.,])[-+]?\d[\d,]*\.\d+(?![\d]|\.\d|[A-Za-wyz_]|x\w)")
DIRECTIVE = re.compile(r"^<!-- figures (from|cited|measured): (.*?) -->\s*$")


# Numbers that name a thing rather than measure it: a model's version (Llama 3.1, Qwen2.5), a
# section, table, equation or arXiv number.
NAMES = re.compile(r"(?:Llama|Qwen|Gemma|GLM-|Claude|Sec\.|Secs\.|Section|Table|Eq\.|arXiv:?|CUDA|"
                   r"NCCL|cuDNN|Python|Megatron-LM|Megatron-Core|Gen) ?[-\d.,]+(?:\s?(?:-|and|to)\s?[\d.]+)*")


def prose_figures(text):
    """The figures of a paragraph, code spans and names left out, signs and thousands commas
    dropped."""
    text = re.sub(r"`[^`]*`", " ", text)
    text = NAMES.sub(" ", text)
    out = []
    for m in FIGURE.finditer(text):
        f = m.group(0).lstrip("+-").replace(",", "")
        if f not in out:
            out.append(f)
    return out


def printed(figure, output):
    """Whether `output` prints `figure`: a number of its own that reads as the figure at the
    figure's precision (104.3 for a printed 104.30 or 104.31; a percentage only beside a %)."""
    percent = figure.endswith("%")
    digits = figure.rstrip("%")
    places = len(digits.split(".")[1]) if "." in digits else 0
    pattern = r"(?<![\d.])(\d+(?:\.\d+)?)" + (r"\s?%" if percent else r"(?![\d])")
    for m in re.finditer(pattern, output.replace(",", "")):
        number = m.group(1)
        shown = len(number.split(".")[1]) if "." in number else 0
        if shown >= places and f"{float(number):.{places}f}" == digits:
            return True
    return False


def paragraphs(lines):
    """(first line, directives, text) of every prose paragraph outside fenced blocks; directives
    are the (kind, argument) of the figure lines right above it."""
    out, i, pending, fenced, generated = [], 0, [], False, None
    while i < len(lines):
        line = lines[i]
        # A block another tool writes and a test compares ("<!-- NAME:begin -->" .. ":end -->").
        g = re.match(r"^<!-- ([\w-]+):(begin|end) -->", line)
        if g:
            generated = g.group(1) if g.group(2) == "begin" else None
            i += 1
            continue
        if generated:
            i += 1
            continue
        if line.startswith("```"):
            fenced = not fenced
            pending = []
            i += 1
            continue
        if fenced:
            i += 1
            continue
        d = DIRECTIVE.match(line)
        if d:
            pending.append((d.group(1), d.group(2)))
            i += 1
            continue
        if not line.strip() or line.startswith("<!--") or line.startswith("#"):
            i += 1  # a blank line or a comment between a figure line and its paragraph
            continue
        # A paragraph, or a table (its rows up to the first line that is not one).
        table = line.startswith("|")
        j = i
        while j < len(lines) and lines[j].strip() and not lines[j].startswith("```") and \
                not DIRECTIVE.match(lines[j]) and lines[j].startswith("|") == table:
            j += 1
        out.append((i, pending, " ".join(lines[i:j])))
        pending = []
        i = j
    return out


def check_prose(name, lines, build, scratch, failures):
    """Every prose figure from a command's output, or said to come from elsewhere. A command
    several paragraphs name runs once."""
    checked, outputs = 0, {}
    for first, directives, text in paragraphs(lines):
        figures = prose_figures(text)
        if not figures:
            continue
        if not directives:
            failures.append(f"{name}:{first + 1}: a paragraph quotes {', '.join(figures[:4])} "
                            "without saying where from (<!-- figures from: COMMAND -->, "
                            "<!-- figures cited: SOURCE --> or <!-- figures measured: HOW -->)")
            continue
        commands = [arg for kind, arg in directives if kind == "from"]
        if not commands:
            continue
        # Figures a cited or measured line beside the command names are its, not the command's.
        said = [f for kind, arg in directives if kind != "from" for f in prose_figures(arg)]
        figures = [f for f in figures if f not in said]
        for cmd in commands:
            if cmd not in outputs:
                r, _ = run(cmd, build, scratch)
                outputs[cmd] = r.stdout + "\n" + r.stderr + "\n"
        output = "".join(outputs[cmd] for cmd in commands)
        checked += 1
        for f in figures:
            if not printed(f, output):
                failures.append(f"{name}:{first + 1}: the prose says {f}, which "
                                f"`{commands[0]}`{' and the rest' if len(commands) > 1 else ''}"
                                " does not print")
    return checked


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
    prose = check_prose(name, lines, build, scratch, failures)
    if update and replacements:
        for first, end, actual in sorted(replacements, reverse=True):
            lines[first:end] = actual
        open(path, "w").write("\n".join(lines))
        print(f"rewrote {len(replacements)} output block(s) of {name}")
    print(f"{name}: {ran} commands run, {compared} outputs compared, {prose} prose paragraphs' "
          f"figures checked, {len(failures)} failures, {len(skipped)} not run for want of a GPU")
    for k in skipped:
        print("  not run: " + k)
    for f in failures:
        print(f)
    sys.exit(1 if failures and not update else 0)


if __name__ == "__main__":
    main()
