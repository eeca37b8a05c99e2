#!/usr/bin/env python3
"""Reads every launcher config of tests/data/from-real/ with `shardplan estimate --from` and
compares the plan it prints with the plan a person reads in the file (manifest.json, "human").

Usage: tools/from_corpus.py BUILD/shardplan [--check | --markdown]

--check exits 1 when any file is read differently from the manifest (ctest from_real_configs);
--markdown prints the table docs/launcher-configs.md holds.

A file matches when every field the person could read (not null) is what shardplan prints; a
refusal (exit 2) is counted apart with its message, as the file left something open or the plan
cannot run. Files that hold no model (DeepSpeed, accelerate) are read with --model llama-3.1-8b
and the GPUs the manifest says, when it says them.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "tests", "data", "from-real")


def norm_precision(p):
    if p is None:
        return None
    p = str(p)
    return "fp8" if p.startswith("fp8") else p


def offload_of(plan):
    o = plan.get("offload") or {}
    parts = [k for k in ("optimizer", "params") if o.get(k)]
    return ",".join(parts) if parts else "none"


def read(binary, entry):
    path = os.path.join(CORPUS, entry["file"])
    args = [binary, "estimate", "--from", path, "--json"]
    h = entry["human"]
    if entry["format"] in ("deepspeed", "accelerate"):
        args += ["--model", "llama-3.1-8b"]
    if entry["format"] != "megatron" and h.get("gpus") and entry["format"] != "accelerate":
        n, g = (int(x) for x in h["gpus"].split("x"))
        args += ["--gpus", str(n * g)]
    r = subprocess.run(args, capture_output=True, text=True, cwd=CORPUS)
    # Exit 1 is a plan that does not fit: the plan is still printed.
    if r.returncode != 0 and not (r.returncode == 1 and r.stdout.startswith("{")):
        err = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        return None, err.replace(CORPUS + "/", "").replace("shardplan: error: ", "")
    return json.loads(r.stdout), None


def compare(entry, j):
    h = entry["human"]
    p, t, m, c = j["plan"], j["training"], j["model"], j["cluster"]
    got = {
        "tp": p["tp"], "pp": p["pp"], "cp": p["cp"], "ep": p["ep"], "dp": p["dp"],
        "zero": p["zero"], "micro_batch": p["micro_batch"], "global_batch": t["global_batch"],
        "precision": norm_precision(t["precision"]), "recompute": p["recompute"],
        "sequence_parallel": p["sequence_parallel"], "offload": offload_of(p),
        "seq_length": t["seq_len"], "num_layers": m.get("layers"), "hidden_size": m.get("hidden"),
        "ffn_hidden_size": m.get("ffn_hidden"), "num_attention_heads": m.get("heads"),
        "num_query_groups": m.get("kv_heads"), "vocab_size": m.get("vocab"),
        "gpus": f'{c["gpus"] // c["gpus_per_node"]}x{c["gpus_per_node"]}'
        if c["gpus"] % c["gpus_per_node"] == 0 else str(c["gpus"]),
    }
    if entry["format"] == "megatron":
        got.update({"normalization": {"rmsnorm": "RMSNorm", "layernorm": "LayerNorm"}.get(m.get("norm")),
                    "untied_embeddings": not m.get("tied_embeddings", True),
                    "swiglu": m.get("mlp") == "swiglu",
                    "bias_linear": bool(m.get("mlp_bias"))})
    diffs = []
    for k, want in h.items():
        if want is None or k not in got:
            continue
        if k == "precision":
            want = norm_precision(want)
        if k == "gpus" and entry["format"] == "accelerate":
            pass
        if got[k] != want:
            diffs.append(f"{k}: file {want}, shardplan {got[k]}")
    return diffs


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    manifest = json.load(open(os.path.join(CORPUS, "manifest.json")))
    matched = refused = misread = 0
    rows = []
    for e in manifest:
        j, err = read(binary, e)
        if err:
            refused += 1
            rows.append((e["file"], "refused", err))
            continue
        d = compare(e, j)
        if d:
            misread += 1
            rows.append((e["file"], "differs", "; ".join(d)))
        else:
            matched += 1
            rows.append((e["file"], "matches", ""))
    summary = (f"{len(manifest)} files: {matched} read as the manifest reads them, {refused} "
               f"refused with the reason, {misread} read differently")
    if "--markdown" in sys.argv:
        by_file = {e["file"]: e for e in manifest}
        print("| file | source (repo, path @ commit) | `--from` | why |")
        print("|---|---|---|---|")
        for f, verdict, why in rows:
            e = by_file[f]
            src = f'{e["repo"]}, `{e["path"]}` @ {e["commit"][:12]}'
            print(f"| `{f}` | {src} | {verdict} | {why.replace('|', '/')} |")
        print(f"\n{summary}")
    else:
        for f, verdict, why in rows:
            print(f"{f:42} {verdict:8} {why}")
        print(f"\n{summary}")
    if "--check" in sys.argv and misread:
        sys.exit(1)


if __name__ == "__main__":
    main()
