#!/usr/bin/env python3
"""Writes profiles/validation/memory-sweeps.json from the sweep sheets Hagemann et al. published.

Source: Hagemann, Weinbach, Dobler, Schall, de Melo, "Efficient Parallelization Layouts for
Large-Scale Distributed Model Training" (NeurIPS 2023 WANT workshop, arXiv:2311.05610); its data
repository github.com/Aleph-Alpha/NeurIPS-WANT-submission-efficient-parallelization-layouts,
commit e13c2cb561231369409cf1761b04cc1fb2c25cfd, data/*.xlsx and data/seqpara/*.xlsx. Every row of
every sheet is one training layout of a LLaMA model on A100-80GB GPUs that either ran (its mean
step time is published) or ended in "OOM Error"; rows marked "Kernel not available" or "Other
Error" say nothing about memory and are counted, not kept.

Usage: tools/import_hagemann23.py CHECKOUT [OUT]
  CHECKOUT  a clone of the data repository at the commit above
  OUT       default profiles/validation/memory-sweeps.json

Only the standard library: an .xlsx is a zip of XML sheets.
"""
import json
import re
import sys
import zipfile
import xml.etree.ElementTree as ET
from pathlib import Path

COMMIT = "e13c2cb561231369409cf1761b04cc1fb2c25cfd"
REPO = "Aleph-Alpha/NeurIPS-WANT-submission-efficient-parallelization-layouts"
NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"

# LLaMA (Touvron et al. 2023, arXiv:2302.13971, Table 2; the released params.json of each size):
# SwiGLU, RMSNorm, rotary positions, untied embeddings, no biases, no dropout. The vocabulary is
# not LLaMA's 32,000 but 128,000: the sheets' own FLOP counts say so, two ways. "Average MFU"
# counts 6N + 12·l·h·s FLOPs per token over the A100's 312 TFLOP/s, and gives exactly 4,194,304
# tokens a step on every sheet (within 0.1%) only when N holds a 128,000-entry embedding and LM
# head (13.999B, 33.807B, 66.859B); "Average TFlops Aleph Alpha" (Aleph Alpha's scaling code,
# src/scaling/transformer/utils/get_tflops.py, get_tflops_aleph_alpha: an LM head of
# 2·gbs·s·h·vocab_size FLOPs) solves to vocab_size 128,000 at that token count. The example
# configuration of that code (examples/transformer_example/config.yml) uses "vocab_size": 128000
# and its own "alpha-001-128k" tokenizer.
LLAMA = {
    "13B": {"layers": 40, "hidden": 5120, "heads": 40, "ffn_hidden": 13824},
    "30B": {"layers": 60, "hidden": 6656, "heads": 52, "ffn_hidden": 17920},
    "65B": {"layers": 80, "hidden": 8192, "heads": 64, "ffn_hidden": 22016},
}
COMMON = {"vocab": 128000, "mlp": "swiglu", "norm": "rmsnorm", "positions": "rotary",
          "tied_embeddings": False, "qkv_bias": False, "out_bias": False, "mlp_bias": False,
          "dropout": False}

# Tokens per step. The sheets do not state the global batch, but every sheet's published
# "Average MFU" x 312 TFLOP/s x step time x world size is one constant per model and sequence
# length whatever the layout or GPU count: a fixed global batch. Counted with the PaLM
# convention the MFU column uses (6N + 12·l·h·s FLOPs per token), it is 4,194,304 tokens at 2k
# and at 8k alike (checked below): 2,048 sequences of 2,048 or 512 of 8,192.
TOKENS_PER_STEP = 4 * 1024 * 1024
A100_BF16_FLOPS = 312e12  # dense bf16 peak, NVIDIA A100 datasheet

KERNELS = {  # the sheets' "kernel" column -> shardplan's attention kind
    "torch": "standard",  # PyTorch attention: the s x s scores are stored
    "fused": "standard",  # Megatron's fused scale-mask-softmax: the probabilities are stored
    "flash_attention": "flash",
    "flash_attentionv1.0.8": "flash",
    "flash_attention2": "flash",
    "flash_attention2 + RMS kernel": "flash",
}


def cells(path):
    """Rows of the first sheet as {column letter: text}."""
    z = zipfile.ZipFile(path)
    shared = []
    if "xl/sharedStrings.xml" in z.namelist():
        for si in ET.fromstring(z.read("xl/sharedStrings.xml")).iter(NS + "si"):
            shared.append("".join(t.text or "" for t in si.iter(NS + "t")))
    rows = []
    for row in ET.fromstring(z.read("xl/worksheets/sheet1.xml")).iter(NS + "row"):
        out = {}
        for c in row.iter(NS + "c"):
            col = re.match(r"[A-Z]+", c.get("r")).group()
            v = c.find(NS + "v")
            if v is not None:
                out[col] = shared[int(v.text)] if c.get("t") == "s" else v.text
        rows.append(out)
    return rows


def params(m):
    h, l, f = m["hidden"], m["layers"], m["ffn_hidden"]
    return l * (4 * h * h + 3 * h * f + 2 * h) + h + 2 * COMMON["vocab"] * h


def sweep(path):
    name = Path(path).stem  # llama_13B_bfloat16_8k_seq_length_128_GPUs_all_runs
    size = re.search(r"llama_(\d+B)", name).group(1)
    seq = 8192 if "8k_seq_length" in name else 2048
    table = cells(path)
    header = {v: k for k, v in table[1].items()}
    col = lambda row, title: row.get(header[title]) if title in header else None
    model = dict(LLAMA[size], seq_len=seq, **COMMON)
    n = params(model)
    rows, skipped, tokens = [], {}, []
    for r in table[2:]:
        status = col(r, "Average Step Time")
        if status is None:
            continue
        kernel = col(r, "kernel")
        ran = status[0].isdigit()
        if not ran and status != "OOM Error":
            skipped[status] = skipped.get(status, 0) + 1
            continue
        if ran:
            flops = float(col(r, "Average MFU")) * A100_BF16_FLOPS * float(status) * int(
                col(r, "World Size"))
            tokens.append(flops / (6 * n + 12 * model["layers"] * model["hidden"] * seq))
        rows.append([
            int(col(r, "Trial ID")), int(col(r, "World Size")), int(col(r, "micro_batch_size")),
            int(col(r, "model_parallel_size")), int(col(r, "pipe_parallel_size")),
            # Sequence parallelism splits along the tensor-parallel group: at tp 1 the flag is a
            # no-op (Megatron-LM's arguments.py turns it off there), and shardplan refuses it.
            col(r, "sequence_parallel") == "1" and int(col(r, "model_parallel_size")) > 1,
            {"disabled": "none", "every_layer": "full"}[col(r, "activation_checkpointing_type")],
            KERNELS[kernel], kernel, "ran" if ran else "out_of_memory",
            round(float(status), 3) if ran else None])
    # The fixed global batch, from the published MFU (see TOKENS_PER_STEP): the median row's
    # (a few rows' averages are a few percent off the rest of their sheet).
    implied = sorted(tokens)[len(tokens) // 2]
    if abs(implied / TOKENS_PER_STEP - 1) > 0.005:
        sys.exit(f"{name}: the rows imply {implied:.3e} tokens per step, not {TOKENS_PER_STEP}")
    rel = Path(path).relative_to(Path(path).parents[1] if "seqpara" not in path else
                                 Path(path).parents[2])
    return {
        "id": f"hagemann23-{size.lower()}-{seq // 1024}k-" +
              ("sp" if "sequence_parallelism" in name else "layouts"),
        "source": f"Hagemann et al. 2023, 'Efficient Parallelization Layouts for Large-Scale "
                  f"Distributed Model Training' (arXiv:2311.05610); github.com/{REPO} "
                  f"{COMMIT[:7]} {rel}",
        "source_group": "hagemann23",
        "model": model,
        "hardware": {"gpu": "A100-SXM4-80GB", "gpus_per_node": 8},
        "precision": "bf16",
        "profile": "megatron",
        # The runs' LM head gathers its logits: Aleph Alpha's scaling (the code the sweeps ran;
        # github.com/Aleph-Alpha/scaling 737f855, src/scaling/transformer/model/layers/lm_head.py)
        # builds it as a ColumnParallelLinear without parallel_output, whose default (False)
        # all-gathers the vocabulary-sharded output (core/nn/linear/column_parallel_linear.py),
        # and its CrossEntropyLoss runs torch.nn.functional.cross_entropy on the whole
        # vocabulary on every TP rank.
        "full_vocab_loss": True,
        # What that loss holds per logit at its backward's peak, read from the same code (the
        # megatron profile's vocabulary-parallel loss holds 6): the 16-bit logits, which the
        # pipeline keeps in its buffer (core/nn/parallel_module/parallel_module.py reads them
        # with pipe_buffer.get, not take), 2 B; cross_entropy on their fp32 copy
        # (losses/cross_entropy.py, output.activations.float()) keeps log_softmax's fp32 output
        # for backward, 4 B, beside the gradient nll_loss hands it, 4 B, and the input gradient
        # log_softmax's backward forms, 4 B: the aten loss's 12 B the fsdp and torchtitan
        # profiles price, plus the logits the buffer holds.
        "loss_peak_bytes_per_logit": 14,
        "plan": {"zero_stage": 1, "global_batch": TOKENS_PER_STEP // seq, "cp": 1},
        "implied_tokens_per_step": int(round(implied, -3)),
        "skipped": skipped,
        "columns": ["trial", "gpus", "micro_batch", "tp", "pp", "sequence_parallel", "recompute",
                    "attention", "kernel", "outcome", "iteration_time_s"],
        "rows": sorted(rows),
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = Path(sys.argv[1])
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "profiles/validation/memory-sweeps.json")
    files = sorted(root.glob("data/*.xlsx")) + sorted(root.glob("data/seqpara/*.xlsx"))
    if not files:
        sys.exit(f"{root}: no data/*.xlsx; clone github.com/{REPO} at {COMMIT[:7]}")
    sweeps = [sweep(str(f)) for f in files]
    text = json.dumps(sweeps, indent=1)
    # One row per line: a thousand rows stay readable in a diff.
    text = re.sub(r"\[\n\s+(\d+),\n([^\]]*?)\n\s+\]",
                  lambda m: "[" + m.group(1) + ", " + ", ".join(
                      x.strip() for x in m.group(2).split(",\n")) + "]", text)
    out.write_text(text + "\n")
    kept = sum(len(s["rows"]) for s in sweeps)
    oom = sum(r[9] == "out_of_memory" for s in sweeps for r in s["rows"])
    print(f"wrote {out}: {len(sweeps)} sweeps, {kept} rows ({oom} out of memory)")


if __name__ == "__main__":
    main()
