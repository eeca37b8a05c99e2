#!/usr/bin/env python3
"""Fits the shape of the fused-attention efficiency curve per GPU generation from the published
kernel measurements in docs/data/attention-kernels.json (FlashAttention-2 forward + backward on
A100, FlashAttention-3 forward on H100; causal, every head dim and sequence length they give):

    eff(S, D) = e_max * S / (S + S_half) * g(D) / g(128),   g(D) = D / (D + D_half)

S is the sequence length of one kernel call (causal), D the head dim. Two free parameters per
generation (S_half, D_half) plus the level e_max, fitted by least squares in log TFLOP/s over a
grid. The level is not written: the GPU profiles' attention_efficiency is the in-step level,
scaled by the step-time fit (`shardplan validate --cross-validate`, knob attention_share).
Run:  tools/fit_attention.py [--write]   (--write puts S_half and D_half in the GPU profiles)
"""
import json
import math
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "attention-kernels.json"
# The kernel each generation's curve is fitted on; generations without published per-shape
# tables take the curve of the nearest kernel design (stated in the profile's source).
FITS = {"ampere": "A100-SXM4-80GB", "hopper": "H100-SXM5-80GB"}
BORROWS = {"volta": "ampere", "ada": "ampere", "blackwell": "hopper", "cdna3": "hopper",
           "cdna4": "hopper"}


def fit(rows):
    best = None
    for s_half in range(50, 3001, 10):
        for d_half in range(0, 201, 2):
            g128 = 128 / (128 + d_half)
            shape = [r["seqlen"] / (r["seqlen"] + s_half) * (r["head_dim"] / (r["head_dim"] + d_half)) / g128
                     for r in rows]
            # The level minimising the squared log error for this shape: the geometric mean.
            level = math.exp(sum(math.log(r["tflops"] / f) for r, f in zip(rows, shape)) / len(rows))
            sse = sum(math.log(level * f / r["tflops"]) ** 2 for r, f in zip(rows, shape))
            if best is None or sse < best[0]:
                best = (sse, s_half, d_half, level)
    sse, s_half, d_half, level = best
    return {"s_half": s_half, "d_half": d_half, "level_tflops": round(level, 1),
            "rms_log_error": round(math.sqrt(sse / len(rows)), 4), "points": len(rows)}


def main():
    rows = json.loads(DATA.read_text())
    fits = {}
    for gen, gpu in FITS.items():
        mine = [r for r in rows if r["gpu"] == gpu]
        fits[gen] = fit(mine)
        fits[gen]["kernel"] = f"{mine[0]['kernel']} {mine[0]['direction']} on {gpu}"
        print(gen, json.dumps(fits[gen]))
    if "--write" not in sys.argv:
        return
    for path in sorted((ROOT / "profiles" / "gpus").glob("*.json")):
        text = path.read_text()
        gen = json.loads(text).get("generation")
        src = gen if gen in fits else BORROWS.get(gen)
        if src is None:
            continue
        f = fits[src]
        borrowed = "" if src == gen else f" ({gen} has no published per-shape table: the {src} curve)"
        why = (f"tools/fit_attention.py over docs/data/attention-kernels.json: {f['kernel']}, causal, "
               f"{f['points']} points; eff(S, D) = e_max S / (S + S_half) g(D) / g(128), "
               f"g(D) = D / (D + D_half): S_half = {f['s_half']}, D_half = {f['d_half']}, "
               f"rms log error {f['rms_log_error']}{borrowed}")
        lines = [l for l in text.split("\n") if '"attention_half_' not in l]
        out = []
        for line in lines:
            out.append(line)
            key = line.strip()
            if key.startswith('"attention_efficiency": ') and not key.startswith('"attention_efficiency": "'):
                out.append(f'  "attention_half_seq": {f["s_half"]},')
                out.append(f'  "attention_half_head_dim": {f["d_half"]},')
            elif key.startswith('"attention_efficiency": "'):
                out.append(f'    "attention_half_seq": {json.dumps(why)},')
                out.append(f'    "attention_half_head_dim": {json.dumps(why)},')
        path.write_text("\n".join(out))
        json.loads(path.read_text())

if __name__ == "__main__":
    main()
