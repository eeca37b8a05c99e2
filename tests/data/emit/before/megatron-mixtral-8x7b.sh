#!/usr/bin/env bash
# Megatron-LM pretrain_gpt.py for mixtral-8x7b on 64 x H100-SXM (79.7 GiB), 8 nodes of 8; nvlink4 inside, 8 x ib-ndr between, written by shardplan
# plan: dp 32 x tp 2 x pp 1, ep 8, ZeRO-1, micro-batch 1, recompute full (plan from flags)
# batch: global 512 = micro-batch 1 x accumulation 16 x data parallel 32; GPUs 64 = dp 32 x tp 2 x pp 1 x cp 1
# predicted step 16.66 s, 251793 tokens/s, MFU 36% (estimate); checkpoint 653.91 GB, blocking write 84.55 s; goodput 95% (runbook)
#
# where each number comes from:
#   data-parallel degree = 32: plan from flags
#   tensor-parallel degree = 2: plan from flags
#   pipeline-parallel degree = 1: plan from flags
#   expert-parallel degree = 8: plan from flags (carved out of data parallel)
#   GPUs = 64 = 8 nodes x 8: dp x tp x pp x cp = 32 x 2 x 1 x 1
#   micro-batch = 1: plan from flags
#   global batch = 512: training (--global-batch)
#   gradient accumulation = 16: global 512 / (micro-batch 1 x data parallel 32)
#   checkpoint interval = 108 steps: round(30.0 min / predicted step 16.66 s (estimate)); interval: default 30 min (checkpoint on wall-clock time, not epochs; --checkpoint-interval auto for the runbook's Young interval, 6.1 h)
#   keep last = 3: runbook (--keep-last; keep the last few checkpoints)
#   collective timeout = 10 min: runbook: max(10 min, 3 x longest wait 2.1 min)
#   seed = 1234: default 1234 (Megatron-LM's --seed default)
#   ZeRO-1 = --use-distributed-optimizer: Megatron-LM's equivalent (megatron_fsdp.md: no_shard / optim / optim_grads / optim_grads_params = ZeRO-0..3)
#   --save-interval = 108: checkpoint interval; optimizer and RNG states are saved by default (--no-save-optim, --no-save-rng not given)
#   --dataloader-type single = resumable: restarts at the checkpoint's consumed_train_samples
#   --log-interval 1 --log-throughput = every step: long runs: log throughput every step so a slow node shows at once
#   --exit-signal-handler = on: saves a checkpoint and exits on SIGTERM (preemption)
#   --grad-reduce-in-bf16 = on: the plan's 2 B/param gradients (--fp32-grads for Megatron's fp32 main gradients, 18 B/param)
# outside the config:
#   - keep the last 3 checkpoints: Megatron-LM has no flag for it (most_recent_k is not a CLI argument), so node 0 prunes older complete iter_* directories below
#   - the vocabulary comes from the tokenizer, padded to a multiple of 128 x tp (--make-vocab-size-divisible-by)
#   - log tokens/s every step (predicted 251793); flag a straggler when the median over 37 steps drops 5% below the run's
# launch:
#   on each of the 8 nodes: NODE_RANK=<0..7> MASTER_ADDR=<node 0> bash megatron.sh
#   or under SLURM: srun --nodes=8 --ntasks-per-node=1 bash megatron.sh (NODE_RANK from SLURM_NODEID)
#   (the script runs torchrun --nnodes 8 --nproc_per_node 8 --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT pretrain_gpt.py; set CHECKPOINT_DIR, DATA_PATH and TOKENIZER_MODEL)
set -euo pipefail

NNODES="8"
GPUS_PER_NODE="8"
NODE_RANK="${NODE_RANK:-${SLURM_NODEID:-0}}"
MASTER_ADDR="${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}"
MASTER_PORT="${MASTER_PORT:-29500}"
CHECKPOINT_DIR="${CHECKPOINT_DIR:?set CHECKPOINT_DIR to shared storage}"
DATA_PATH="${DATA_PATH:?set DATA_PATH to the Megatron .bin/.idx prefix}"
TOKENIZER_MODEL="${TOKENIZER_MODEL:?set TOKENIZER_MODEL to a Hugging Face tokenizer name or path}"
KEEP_LAST="3"
TRAIN_ITERS="${TRAIN_ITERS:?set TRAIN_ITERS (or pass --tokens to shardplan emit)}"
export CUDA_DEVICE_MAX_CONNECTIONS=1

MEGATRON_ARGS=(
  --tensor-model-parallel-size 2
  --pipeline-model-parallel-size 1
  --expert-model-parallel-size 8
  --use-distributed-optimizer
  --overlap-grad-reduce
  --overlap-param-gather
  --num-layers 32
  --hidden-size 4096
  --num-attention-heads 32
  --ffn-hidden-size 14336
  --group-query-attention
  --num-query-groups 8
  --seq-length 8192
  --max-position-embeddings 32768
  --swiglu
  --normalization RMSNorm
  --position-embedding-type rope
  --untie-embeddings-and-output-weights
  --disable-bias-linear
  --attention-dropout 0
  --hidden-dropout 0
  --num-experts 8
  --moe-router-topk 2
  --moe-ffn-hidden-size 14336
  --attention-backend flash
  --micro-batch-size 1
  --global-batch-size 512
  --train-iters "$TRAIN_ITERS"
  --bf16
  --grad-reduce-in-bf16
  --recompute-granularity full
  --recompute-method uniform
  --recompute-num-layers 1
  --optimizer adam
  --save "$CHECKPOINT_DIR"
  --load "$CHECKPOINT_DIR"
  --save-interval 108
  --ckpt-format torch_dist
  --distributed-timeout-minutes 10
  --seed 1234
  --dataloader-type single
  --exit-signal-handler
  --log-interval 1
  --log-throughput
  --data-path "$DATA_PATH"
  --tokenizer-type HuggingFaceTokenizer
  --tokenizer-model "$TOKENIZER_MODEL"
)

# Keep the newest $KEEP_LAST complete checkpoints (Megatron-LM has no flag for it); the one being
# written is newer than latest_checkpointed_iteration.txt and is never touched.
prune_checkpoints() {
  local latest
  latest=$(cat "$CHECKPOINT_DIR/latest_checkpointed_iteration.txt" 2>/dev/null) || return 0
  find "$CHECKPOINT_DIR" -maxdepth 1 -name 'iter_*' | sort \
    | awk -v last="$(printf '%s/iter_%07d' "$CHECKPOINT_DIR" "$latest")" '$0 <= last' \
    | head -n -"$KEEP_LAST" | xargs -r rm -rf
}
if [ "$NODE_RANK" = 0 ]; then
  (while sleep 300; do prune_checkpoints; done) &
  pruner=$!
  trap 'kill "$pruner" 2>/dev/null' EXIT
fi

torchrun --nnodes "$NNODES" --nproc_per_node "$GPUS_PER_NODE" --node_rank "$NODE_RANK" \
  --master_addr "$MASTER_ADDR" --master_port "$MASTER_PORT" \
  pretrain_gpt.py "${MEGATRON_ARGS[@]}"
