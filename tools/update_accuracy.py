#!/usr/bin/env python3
"""Writes the step-time intervals that `shardplan validate --cross-validate` derives into the
framework profiles (accuracy, accuracy_beyond_corpus), the README's accuracy paragraph, the
held-out tables of docs/validation-corpus.md (closed form against simulated step) and the
README's few-shot table.

Run after any change that moves a prediction:  tools/update_accuracy.py [build/shardplan]
The engine test "shipped intervals are the cross-validation's" fails until this is rerun.
"""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BINARY = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build" / "shardplan")
FRAMEWORKS = ["megatron", "deepspeed", "torchtitan", "fsdp"]
BEGIN, END = "<!-- accuracy:begin -->", "<!-- accuracy:end -->"
GROUPS_BEGIN, GROUPS_END = "<!-- held-out-groups:begin -->", "<!-- held-out-groups:end -->"
FEW_BEGIN, FEW_END = "<!-- few-shot:begin -->", "<!-- few-shot:end -->"


def run(*args):
    return subprocess.run([BINARY, "validate", "--cross-validate", *args], check=True,
                          capture_output=True, text=True).stdout


def row(gpu_class, cases, groups, interval, reach=None, models=None):
    out = {"gpu_class": gpu_class, "models": models} if gpu_class else {}
    out.update({"cases": cases, "groups": groups, "split": "cross-validated",
                "step_error_low": round(interval["low"], 4),
                "step_error_high": round(interval["high"], 4),
                "source": "shardplan validate --cross-validate: " + interval["basis"]})
    if reach is not None:  # what the class's cases span; a plan beyond it widens
        out["reach"] = reach
    return out


def main():
    cv = json.loads(run("--json"))
    by_framework = {f: [] for f in FRAMEWORKS}
    for c in cv["per_class"]:
        # "megatron H100" or "megatron H100 MoE": framework, GPU class, model kind.
        framework, gpu_class = c["class"].split(" ", 1)
        models = "dense"
        if gpu_class.endswith(" MoE"):
            gpu_class, models = gpu_class[: -len(" MoE")], "moe"
        if framework in by_framework:
            by_framework[framework].append(row(gpu_class, c["errors"]["cases"], c["groups"],
                                               c["interval"], c["reach"], models))
    beyond = cv["extrapolation_interval"]
    for framework, rows in by_framework.items():
        path = ROOT / "profiles" / "frameworks" / f"{framework}.json"
        profile = json.loads(path.read_text())
        profile["accuracy"] = rows
        profile["accuracy_beyond_corpus"] = row(None, beyond["cases"], beyond["groups"], beyond)
        # Keep the key before "sources", where a reader looks for the accuracy rows.
        ordered = {k: v for k, v in profile.items() if k != "sources"}
        ordered["sources"] = profile["sources"]
        path.write_text(json.dumps(ordered, indent=2, ensure_ascii=False) + "\n")
    replace_between(ROOT / "README.md", BEGIN, END, run("--markdown"))
    replace_between(ROOT / "docs" / "validation-corpus.md", GROUPS_BEGIN, GROUPS_END,
                    run("--markdown-groups"))
    replace_between(ROOT / "README.md", FEW_BEGIN, FEW_END,
                    few_shot_table(json.loads(run("--calibrate-with", "1", "--json"))))


def few_shot_table(cv):
    """The few-shot table of `validate --cross-validate --calibrate-with 1`, as Markdown."""
    shots = cv["few_shot"]
    rows = {}
    for shot in shots:
        for r in shot["per_stack"]:
            rows.setdefault(r["stack"], {})[shot["k"]] = r
    out = ["| framework x GPU generation | cases | not calibrated: mean | signed | covered "
           "| calibrated on 1 run: mean | signed | covered |",
           "|---|---|---|---|---|---|---|---|"]
    for stack, by_k in rows.items():
        cells = [stack, str(by_k[0]["errors"]["cases"])]
        for k in (0, 1):
            e = by_k[k]["errors"]
            n = e["cases"]
            cells += [f"{e['mean_abs_error'] * 100:.1f}%", f"{e['median_signed_error'] * 100:+.1f}%",
                      f"{by_k[k]['covered']} of {n}"]
        out.append("| " + " | ".join(cells) + " |")
    one = shots[-1]
    out.append("")
    out.append(f"Calibrated on one run, a plan's 80% interval is {one['interval']['low'] * 100:+.1f}% "
               f"to {one['interval']['high'] * 100:+.1f}% (measured step against predicted), "
               f"from {one['cases']} held-out calibrated predictions in {one['buckets']} "
               "(source, model, stack, GPU) buckets; it holds "
               f"{one['coverage'] * 100:.1f}% of them.")
    return "\n".join(out) + "\n"


def replace_between(path, begin, end, body):
    text = path.read_text()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        path.write_text(head + begin + "\n" + body + end + tail)


if __name__ == "__main__":
    main()
