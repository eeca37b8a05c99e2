#!/bin/bash
# A Megatron-LM launch script written by hand in the style of examples/gpt3/train_gpt3_175b_distributed.sh:
# Llama-2-7B shapes, 2 nodes of 8 GPUs, tp 2 x pp 2, the distributed optimizer, selective recompute.

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NNODES=${NNODES:-2}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=6000
NODE_RANK=${NODE_RANK:-0}
TP=2
PP=2

CHECKPOINT_PATH=$1
DATA_PATH=$2

DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank $NODE_RANK \
  --master_addr $MASTER_ADDR --master_port $MASTER_PORT"

GPT_ARGS="
    --num-layers 32 \
    --hidden-size 4096 \
    --num-attention-heads 32 \
    --ffn-hidden-size 11008 \
    --swiglu \
    --normalization RMSNorm \
    --position-embedding-type rope \
    --rotary-base 10000 \
    --norm-epsilon 1e-5 \
    --untie-embeddings-and-output-weights \
    --disable-bias-linear \
    --seq-length 4096 \
    --max-position-embeddings 4096 \
    --micro-batch-size 1 \
    --global-batch-size 256 \
    --lr 3.0e-4 \
    --min-lr 3.0e-5 \
    --lr-decay-style cosine \
    --lr-warmup-iters 2000 \
    --weight-decay 0.1 \
    --clip-grad 1.0 \
    --adam-beta1 0.9 \
    --adam-beta2 0.95 \
    --bf16
"

PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP
    --pipeline-model-parallel-size $PP
    --sequence-parallel
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
    --recompute-granularity selective
)

OUTPUT_ARGS="--log-interval 10 --save-interval 1000 --eval-interval 1000 --eval-iters 10 --my-site-profiler on"

torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \
    $GPT_ARGS \
    "${PARALLEL_ARGS[@]}" \
    $OUTPUT_ARGS \
    --data-path $DATA_PATH \
    --tokenizer-type HuggingFaceTokenizer \
    --tokenizer-model meta-llama/Llama-2-7b-hf \
    --save $CHECKPOINT_PATH \
    --load $CHECKPOINT_PATH
