#!/usr/bin/env bash
# Megatron-LM pretrain_gpt.py for deepseek-v3 on 2048 x H800 (79.7 GiB), 256 nodes of 8; nvlink4-h800 inside, 8 x ib-ndr between, written by shardplan
# plan: dp 128 x tp 1 x pp 16, ep 64, ZeRO-1, micro-batch 1, recompute full, schedule 1f1b (plan from flags)
# batch: global 15360 = micro-batch 1 x accumulation 120 x data parallel 128; GPUs 2048 = dp 128 x tp 1 x pp 16 x cp 1
# predicted step 34.39 s, 1829283 tokens/s, MFU 13% (estimate); checkpoint 9.40 TB, blocking write 37.80 s; goodput 96% (runbook)
#
# where each number comes from:
#   data-parallel degree = 128: plan from flags
#   tensor-parallel degree = 1: plan from flags
#   pipeline-parallel degree = 16: plan from flags
#   expert-parallel degree = 64: plan from flags (carved out of data parallel)
#   GPUs = 2048 = 256 nodes x 8: dp x tp x pp x cp = 128 x 1 x 16 x 1
#   micro-batch = 1: plan from flags
#   global batch = 15360: training (--global-batch)
#   gradient accumulation = 120: global 15360 / (micro-batch 1 x data parallel 128)
#   checkpoint interval = 52 steps: round(30.0 min / predicted step 34.39 s (estimate)); interval: default 30 min (checkpoint on wall-clock time, not epochs; --checkpoint-interval auto for the runbook's Young interval, 43.3 min)
#   keep last = 3: runbook (--keep-last; keep the last few checkpoints)
#   collective timeout = 10 min: runbook: max(10 min, 3 x longest wait 61.06 s)
#   seed = 1234: default 1234 (Megatron-LM's --seed default)
#   ZeRO-1 = --use-distributed-optimizer: Megatron-LM's equivalent (megatron_fsdp.md: no_shard / optim / optim_grads / optim_grads_params = ZeRO-0..3)
#   --save-interval = 52: checkpoint interval; optimizer and RNG states are saved by default (--no-save-optim, --no-save-rng not given)
#   --dataloader-type single = resumable: restarts at the checkpoint's consumed_train_samples
#   --log-interval 1 --log-throughput = every step: long runs: log throughput every step so a slow node shows at once
#   --exit-signal-handler = on: saves a checkpoint and exits on SIGTERM (preemption)
#   --grad-reduce-in-bf16 = on: the plan's 2 B/param gradients (--fp32-grads for Megatron's fp32 main gradients, 18 B/param)
# outside the config:
#   - keep the last 3 checkpoints: Megatron-LM has no flag for it (most_recent_k is not a CLI argument), so node 0 prunes older complete iter_* directories below
#   - the vocabulary comes from the tokenizer, padded to a multiple of 128 x tp (--make-vocab-size-divisible-by)
#   - log tokens/s every step (predicted 1829283); flag a straggler when the median over 18 steps drops 5% below the run's
# launch:
#   on each of the 256 nodes: NODE_RANK=<0..255> MASTER_ADDR=<node 0> bash megatron.sh
#   or under SLURM: srun --nodes=256 --ntasks-per-node=1 bash megatron.sh (NODE_RANK from SLURM_NODEID)
#   (the script runs torchrun --nnodes 256 --nproc_per_node 8 --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT pretrain_gpt.py; set CHECKPOINT_DIR, DATA_PATH and TOKENIZER_MODEL)
set -euo pipefail

NNODES="256"
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
  --tensor-model-parallel-size 1
  --pipeline-model-parallel-size 16
  --expert-model-parallel-size 64
  --use-distributed-optimizer
  --overlap-grad-reduce
  --overlap-param-gather
  --num-layers 61
  --hidden-size 7168
  --num-attention-heads 128
  --ffn-hidden-size 18432
  --kv-channels 192
  --seq-length 4096
  --max-position-embeddings 163840
  --swiglu
  --normalization RMSNorm
  --position-embedding-type rope
  --untie-embeddings-and-output-weights
  --disable-bias-linear
  --attention-dropout 0
  --hidden-dropout 0
  --num-experts 256
  --moe-router-topk 8
  --moe-ffn-hidden-size 2048
  --moe-shared-expert-intermediate-size 2048
  --moe-layer-freq '[0,0,0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]'
  --moe-router-enable-expert-bias
  --mtp-num-layers 1
  --multi-latent-attention
  --kv-lora-rank 512
  --q-lora-rank 1536
  --qk-head-dim 128
  --qk-pos-emb-head-dim 64
  --v-head-dim 128
  --attention-backend flash
  --micro-batch-size 1
  --global-batch-size 15360
  --train-iters "$TRAIN_ITERS"
  --bf16
  --fp8-format hybrid
  --grad-reduce-in-bf16
  --recompute-granularity full
  --recompute-method uniform
  --recompute-num-layers 1
  --optimizer adam
  --save "$CHECKPOINT_DIR"
  --load "$CHECKPOINT_DIR"
  --save-interval 52
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
