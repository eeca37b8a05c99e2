#!/usr/bin/env python3
"""Derives each GPU profile's gemm_dtype_share from the measured maximum achievable matmul
throughput in docs/data/gemm-max-achievable.json (MAMF: best shape of a sweep, ml-engineering;
MAF: AMD's tuned shape): the fraction of its dense peak an fp8 GEMM reaches over the fraction a
bf16 GEMM reaches on the same GPU and software,

    share(fp8) = (MAF_fp8 / peak_fp8) / (MAF_bf16 / peak_bf16)

so the bf16-fitted efficiency curve times the share prices an fp8 GEMM. fp4 has no published
table: it takes the fp8 share. A GPU without both rows borrows the share of the part with the
same chip (named in its source).
Run:  tools/fit_gemm_dtypes.py [--write]
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "gemm-max-achievable.json"
# profile name -> (the rows' GPU name, what is borrowed if not its own)
MEASURED = {"H100-SXM": "H100-SXM", "B200": "B200-SXM", "B300": "B300-SXM",
            "GB200": "GB200 (B200-class GPU)", "MI300X": "MI300X", "MI325X": "MI325X"}
BORROW = {"H100-PCIe": "H100-SXM", "H100-96GB-500W": "H100-SXM", "H200": "H100-SXM",
          "H800": "H100-SXM", "GB300": "B300", "MI355X": "MI325X"}
# MI300X / MI325X: AMD's MAF rows (fp8 and bf16 from one method); NVIDIA parts: MAMF.
METRIC = {"MI300X": "MAF (vendor-measured max achievable)",
          "MI325X": "MAF (vendor-measured max achievable)"}
PEAKS = {"MI300X": (1307.4, 2614.9), "MI325X": (1307.4, 2614.9)}  # bf16, fp8 dense (AMD specs)


def shares():
    rows = json.loads(DATA.read_text())
    out = {}
    for name, gpu in MEASURED.items():
        metric = METRIC.get(name, "MAMF (best over a shape sweep)")
        mine = [r for r in rows if r["gpu"] == gpu and r["metric"] == metric]
        bf16 = next(r for r in mine if r["dtype"] == "bf16")
        fp8 = next(r for r in mine if r["dtype"].startswith("fp8"))
        pb, p8 = PEAKS.get(name, (bf16["peak_tflops_dense"], fp8["peak_tflops_dense"]))
        share = (fp8["tflops"] / p8) / (bf16["tflops"] / pb)
        out[name] = (round(share, 3),
                     f"tools/fit_gemm_dtypes.py: {metric} {fp8['tflops']} of {p8} TFLOP/s fp8 "
                     f"({fp8['id']}) against {bf16['tflops']} of {pb} bf16 ({bf16['id']}), "
                     f"docs/data/gemm-max-achievable.json; fp4 takes the fp8 share (no table)")
    for name, src in BORROW.items():
        out[name] = (out[src][0], out[src][1] + f"; {name} has no rows of its own: {src}'s")
    return out


def main():
    s = shares()
    for name, (share, why) in s.items():
        print(f"{name:16} fp8 share {share}")
    if "--write" not in sys.argv:
        return
    for path in sorted((ROOT / "profiles" / "gpus").glob("*.json")):
        text = path.read_text()
        name = json.loads(text)["name"]
        if name not in s:
            continue
        share, why = s[name]
        lines = [l for l in text.split("\n") if '"gemm_dtype_share"' not in l]
        out = []
        for line in lines:
            key = line.strip()
            if key.startswith('"attention_efficiency": ') and not key.startswith('"attention_efficiency": "'):
                out.append(f'  "gemm_dtype_share": {{"fp8": {share}, "fp4": {share}}},')
            elif key.startswith('"attention_efficiency": "'):
                out.append(f'    "gemm_dtype_share": {json.dumps(why)},')
            out.append(line)
        path.write_text("\n".join(out))
        json.loads(path.read_text())


if __name__ == "__main__":
    main()
