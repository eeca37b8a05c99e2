#!/usr/bin/env python3
"""Validates real --json output of every command against its schema in docs/schema/.

usage: check_schemas.py SHARDPLAN_BINARY REPOSITORY_ROOT
Each case runs the binary, parses stdout and validates it (Draft 2020-12); a failure prints the
command, the JSON path and what the schema wanted. Exit 1 on any failure.
"""
import json
import tempfile
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("check_schemas.py: python3-jsonschema is missing: apt-get install python3-jsonschema "
             "(./build.sh test installs it)")

CASES = [
    ("memory", "memory --model llama-2-7b --gpus 8 --zero 1 --json", 0),
    ("memory", "memory --params 7e9 --gpus 1 --json", 1),
    ("comm", "comm --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --zero 3 --json", 0),
    ("estimate", "estimate --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --tp 8 --pp 2 "
                 "--zero 1 --sequence-parallel --recompute full --global-batch 256 --tokens 2T "
                 "--gpu-hour-cost 2.5 --json", 0),
    ("estimate", "estimate --params 7e9 --gpus 8 --zero 1 --json", 0),
    ("estimate", "estimate --model llama-3.1-405b --cluster gb200-nvl72 --gpus 128 --tp 2 "
                 "--zero 3 --sequence-parallel --seq-len 8192 --global-batch 64 "
                 "--precision fp8-tensorwise --offload-activation-layers 92 --json", 0),
    ("runbook", "runbook --model gpt3-175b --cluster dgx-a100 --gpus 1024 --tp 8 --pp 8 --zero 1 "
                "--recompute full --global-batch 1536 --tokens 300B --json", 0),
    ("runbook", "runbook --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --json", 0),
    ("plan", "plan --model llama-2-7b --cluster dgx-h100 --gpus 16 --json", 0),
    ("plan", "plan --model llama-3.1-405b --gpus 1 --json", 1),
    ("plan", "plan --from {root}/tests/data/launch/deepspeed-zero3-offload.json --model llama-2-7b "
             "--json", 0),
    ("estimate", "estimate --from {root}/tests/data/launch/megatron-llama2-7b.sh --json", 0),
    ("runbook", "runbook --from {root}/tests/data/launch/torchtitan-llama3-8b.toml --gpus 16 "
                "--json", 0),
    ("memory", "memory --from {root}/tests/data/launch/accelerate-fsdp1.yaml --model llama-3.1-8b "
               "--json", 0),
    ("list", "list models --json", 0),
    ("list", "list clusters --json", 0),
    ("validate", "validate --json", 0),
    ("validate-cross-validate", "validate --cross-validate --json", 0),
    ("validate-cross-validate", "validate --cross-validate --calibrate-with 1 --json", 0),
    ("calibrate", "calibrate --model llama-3.1-8b --cluster dgx-h100 --gpus 8 --tp 1 --zero 1 "
                  "--micro-batch 1 --global-batch 128 --seq-len 8192 "
                  "--log {root}/tests/data/logs/megatron-llama3.1-8b-8xH100.log "
                  "-o {tmp}/calibration.json --json", 0),
]


def main():
    binary, root = sys.argv[1], sys.argv[2]
    failures = 0
    tmp = tempfile.mkdtemp(prefix="shardplan-schema-")
    for command, args, status in CASES:
        with open(f"{root}/docs/schema/{command}.schema.json") as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        run = subprocess.run([binary] + args.format(root=root, tmp=tmp).split(), capture_output=True,
                             text=True)
        if run.returncode != status:
            print(f"FAIL {args}: exit {run.returncode}, expected {status}\n{run.stderr}")
            failures += 1
            continue
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(json.loads(run.stdout)),
                        key=lambda e: list(e.absolute_path))
        for e in errors:
            print(f"FAIL {args}: at /{'/'.join(map(str, e.absolute_path))}: {e.message}")
        failures += len(errors)
        if not errors:
            print(f"ok   {args}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
