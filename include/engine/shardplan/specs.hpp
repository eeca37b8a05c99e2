// The four inputs of every estimate: model architecture, cluster, training settings, plan.
// Plain structs in base units (bytes, seconds, FLOP/s); loaders fill them, the engine reads them.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardplan/framework.hpp"
#include "shardplan/precision.hpp"

namespace shardplan {

/// squared_relu: relu(x)^2 in a two-matrix MLP (Nemotron-4, So et al. 2021 "Primer").
enum class MlpKind { gelu, swiglu, geglu, squared_relu };
enum class NormKind { layernorm, rmsnorm };
/// A layer's token mixer: softmax attention, a gated DeltaNet (Qwen3-Next), lightning attention
/// (MiniMax-01), a Mamba-2 SSM (Nemotron-H), or none (a hybrid pattern's MLP or MoE block).
enum class MixerKind { attention, gated_deltanet, lightning, mamba2, none };
/// A layer's feed-forward part: an MLP, a MoE, or none (a hybrid pattern's mixer block).
enum class FfnKind { mlp, moe, none };
/// none: attention without position information (Nemotron-H: its Mamba layers order the tokens).
enum class PositionKind { learned, rotary, alibi, none };
/// How a config.json's rope_scaling stretches rotary frequencies (transformers'
/// modeling_rope_utils.py ROPE_INIT_FUNCTIONS: "linear", "llama3", "yarn").
enum class RopeScaling { none, linear, llama3, yarn };
/// How a MoE router turns logits into scores (DeepSeek-V3 config.json scoring_func).
enum class RouterScore { softmax, sigmoid };
enum class OptimizerKind { adamw, sgd_momentum, adafactor, adam_8bit };
enum class Recompute { none, selective, full };
/// Megatron-Core's fine-grained selective recompute (--recompute-granularity selective
/// --recompute-modules; TransformerConfig.recompute_modules), one bit each. core_attn, mlp, moe
/// and shared_experts checkpoint the submodule (its input kept, its insides recomputed);
/// layernorm, mla_up_proj and moe_act discard their output after its consumer ran and recompute
/// it before backward. Megatron's default set is core_attn alone.
enum class RecomputeModule : unsigned {
  core_attn = 1u << 0,
  layernorm = 1u << 1,
  mla_up_proj = 1u << 2,
  moe_act = 1u << 3,
  mlp = 1u << 4,
  moe = 1u << 5,
  shared_experts = 1u << 6,
};
constexpr unsigned bit(RecomputeModule m) {
  return static_cast<unsigned>(m);
}
enum class AttentionKind { flash, standard };
/// What leaves the device (offload.hpp has the memory and time it costs).
struct Offload {
  bool optimizer = false;    // fp32 master weights + optimizer states, and the update (CPU Adam)
  bool params = false;       // ZeRO-3 weight shards between uses (gathered layer by layer)
  bool activations = false;  // checkpointed layer inputs (full recompute), fetched for backward
  OffloadTarget to = OffloadTarget::cpu;
  // The saved activations of this many transformer layers per pipeline stage go to host memory
  // after their forward and come back for their backward, without recompute (Megatron-Core
  // --cpu-offloading --cpu-offloading-num-layers; offload.hpp). 0: none.
  int activation_layers = 0;
  bool any() const { return optimizer || params || activations || activation_layers > 0; }
};

/// One host's side (the CPUs of one OS image), for offload. All zero when the profile gives none.
struct HostSpec {
  double memory_bytes = 0;      // host DRAM per host (LPDDR5X of both Graces on a GB200 tray)
  std::string link_name;        // the CPU-GPU link preset: pcie5, nvlink-c2c, ...
  double link_bytes_per_s = 0;  // host <-> GPU per GPU, one direction (PCIe x16, NVLink-C2C)
  double dram_bytes_per_s = 0;  // peak DRAM bandwidth per host (all sockets)
  double dram_efficiency = 0;   // share of it a streaming CPU pass (CPU Adam) reaches
  double nvme_bytes_per_s = 0;  // local NVMe per node, sequential
  std::string source;
  // Measured by `shardplan probe` on this cluster (0: not measured): one GPU's pinned copies per
  // direction while every GPU of the node copies, and the node's STREAM Triad rate with every
  // rank of the node running at once.
  double measured_h2d_bytes_per_s = 0;
  double measured_d2h_bytes_per_s = 0;
  double measured_dram_bytes_per_s = 0;
  std::string measured_source;

  /// What offload pricing uses per direction: the measured copy rate when the profile has one,
  /// else the link preset's (datasheet) bandwidth.
  double h2d_bytes_per_s() const {
    return measured_h2d_bytes_per_s > 0 ? measured_h2d_bytes_per_s : link_bytes_per_s;
  }
  double d2h_bytes_per_s() const {
    return measured_d2h_bytes_per_s > 0 ? measured_d2h_bytes_per_s : link_bytes_per_s;
  }
  /// The DRAM rate CPU Adam streams at: the measured STREAM Triad rate (the best a streaming
  /// pass reaches on this node), else peak x dram_efficiency.
  double cpu_adam_dram_bytes_per_s() const {
    return measured_dram_bytes_per_s > 0 ? measured_dram_bytes_per_s
                                         : dram_bytes_per_s * dram_efficiency;
  }
  bool link_measured() const {
    return measured_h2d_bytes_per_s > 0 && measured_d2h_bytes_per_s > 0;
  }
  bool dram_measured() const { return measured_dram_bytes_per_s > 0; }
  bool known() const {
    return memory_bytes > 0 && h2d_bytes_per_s() > 0 && d2h_bytes_per_s() > 0 &&
           cpu_adam_dram_bytes_per_s() > 0;
  }
};

/// Rotary embedding settings a config.json holds (rope_theta, rope_scaling). Zero: not given.
struct RopeSpec {
  double theta = 0;  // rope_theta; 0 = the common default 10000 (RoFormer, Su et al. 2021)
  RopeScaling scaling = RopeScaling::none;
  double factor = 0;
  int original_positions = 0;  // original_max_position_embeddings
  double low_freq_factor = 0;  // llama3
  double high_freq_factor = 0;
  double beta_fast = 0;  // yarn
  double beta_slow = 0;
  double mscale = 0;
  double mscale_all_dim = 0;
  double fraction = 1;  // partial_rotary_factor: the share of each head's channels rotated
};

/// How a MoE router picks and weighs experts (config.json's scoring_func, routed_scaling_factor,
/// n_group / topk_group, router_aux_loss_coef or aux_loss_alpha). Zero: not given.
struct RouterSpec {
  RouterScore score = RouterScore::softmax;
  double topk_scale = 0;  // routed_scaling_factor: the chosen weights are multiplied by it
  int groups = 0;         // n_group: experts in groups, tokens routed to group_topk of them
  int group_topk = 0;
  double aux_loss_coeff = 0;       // load-balancing loss weight
  bool sequence_aux_loss = false;  // DeepSeek's per-sequence balance loss (seq_aux)
};

/// Multi-head latent attention (DeepSeek-V2/V3, config.json's fields of the same names):
/// kv_lora_rank == 0 means ordinary attention.
struct MlaSpec {
  int q_lora_rank = 0;  // 0 = queries projected directly (DeepSeek-V2-Lite)
  int kv_lora_rank = 0;
  int qk_rope_head_dim = 0;
  int qk_nope_head_dim = 0;
  int v_head_dim = 0;
};

/// The mixer of a hybrid's linear-attention layers: a gated DeltaNet (Qwen3-Next; Yang et al.
/// 2024, "Gated Delta Networks", arXiv:2412.06464) of these heads and widths, or lightning
/// attention (MiniMax-01, arXiv:2501.08313: the model's heads, blocks of lightning_block tokens,
/// a sigmoid output gate). Model JSON keys: linear_key_heads ... linear_mixer, lightning_block.
struct LinearMixerSpec {
  MixerKind mixer = MixerKind::gated_deltanet;
  int key_heads = 0;
  int value_heads = 0;
  int key_head_dim = 0;
  int value_head_dim = 0;
  int conv_kernel = 0;  // the short causal convolution over q, k and v
  int lightning_block = 0;
};

/// The Mamba-2 mixer (Dao & Gu 2024, "Transformers are SSMs", arXiv:2405.21060; transformers'
/// modeling_nemotron_h.py NemotronHMamba2Mixer): heads of head_dim channels, a state of `state`
/// per head, B and C shared by the heads of each of `groups` groups. Model JSON keys: mamba_heads
/// ... mamba_proj_bias.
struct MambaSpec {
  int heads = 0;
  int head_dim = 0;
  int state = 0;
  int groups = 0;
  int conv_kernel = 0;
  int chunk = 0;           // the SSD kernel's chunk length (chunk_size)
  bool conv_bias = true;   // use_conv_bias
  bool proj_bias = false;  // use_bias: in_proj and out_proj biases
};

/// Model architecture only. `layers == 0` means only the parameter count is known (--params).
struct ModelSpec {
  std::string name;
  std::string source;  // where the architecture came from (preset file, config.json, flags)
  /// Hugging Face transformers' model_type ("mixtral", "deepseek_v3", "llama4_text"), where
  /// known: what a launcher that recognises models by family (DeepSpeed's AutoEP) goes by.
  std::string model_type;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int ffn_hidden = 0;  // per expert for MoE models
  int vocab = 0;
  int max_positions = 0;
  int seq_len = 0;  // the model's own training context; the default --seq-len
  MlpKind mlp = MlpKind::gelu;
  NormKind norm = NormKind::layernorm;
  PositionKind positions = PositionKind::learned;
  bool tied_embeddings = true;
  bool qkv_bias = true;
  bool out_bias = true;
  bool mlp_bias = true;
  bool dropout = true;
  int experts = 0;  // 0 = dense
  int experts_per_token = 0;
  double params_only = 0;  // total parameters when no architecture is known

  // Mixture-of-experts layout. Layer i (from 0) is a MoE layer when i >= first_dense_layers and
  // (i - first_dense_layers + 1) is a multiple of moe_layer_step (DeepSeek's
  // first_k_dense_replace, Qwen-MoE's decoder_sparse_step, Llama 4's interleave_moe_layer_step).
  int first_dense_layers = 0;
  int moe_layer_step = 1;
  int dense_ffn_hidden = 0;   // MLP width of the dense layers of a MoE model; 0 = ffn_hidden
  int shared_ffn_hidden = 0;  // width of the always-on shared expert(s) of a MoE layer; 0 = none
  bool shared_expert_gate = false;  // Qwen2-MoE's sigmoid gate on the shared expert (h weights)
  bool router_bias = false;         // DeepSeek-V3's per-expert score-correction bias
  bool router_linear_bias = false;  // gpt-oss: the router's Linear has its own bias [E]
  double activation_clamp = 0;      // gpt-oss swiglu_limit: gate and up clamped to it; 0 = none
  bool norm_zero_centered = false;  // LayerNorm1P (Nemotron-4): weights stored as gamma - 1
  MlaSpec mla;                      // multi-head latent attention (DeepSeek-V2/V3); none by default
  bool qk_norm = false;     // per-head RMSNorm of queries and keys (Qwen3, Gemma 3)
  int norms_per_layer = 2;  // Gemma 2/3 add post-attention and post-MLP norms: 4
  int mtp_layers = 0;       // DeepSeek-V3's multi-token-prediction modules, counted apart
  // Sliding-window attention: every layer but each global_attention_every-th attends to the last
  // sliding_window tokens only (Gemma 2: every 2nd global, Gemma 3: every 6th; 0 = none global).
  int sliding_window = 0;
  int global_attention_every = 0;
  bool attention_sinks = false;        // gpt-oss: one learned logit per head in each softmax
  bool attention_output_gate = false;  // Qwen3-Next: q_proj also yields a sigmoid output gate
  // Linear-attention layers beside softmax attention (Qwen3-Next, MiniMax-01): layer i is
  // softmax attention when i + 1 is a multiple of full_attention_every, `linear`'s mixer
  // otherwise; 0 = none.
  int full_attention_every = 0;
  LinearMixerSpec linear;  // the non-softmax layers' mixer
  // Block-pattern hybrids (Nemotron-H's hybrid_override_pattern, Megatron-Core's
  // --hybrid-override-pattern): layer i is one block with its own pre-norm and residual, by
  // character 'M' a Mamba-2 mixer, '*' softmax attention, '-' an MLP, 'E' a MoE. Empty: every
  // layer is a token mixer followed by an MLP or MoE.
  std::string block_pattern;
  MambaSpec mamba;                 // the 'M' blocks' Mamba-2 mixer
  RopeSpec rope;                   // rotary positions only
  double norm_epsilon = 0;         // rms_norm_eps / layer_norm_epsilon; 0 = not given
  RouterSpec router;               // MoE only
  std::vector<std::string> notes;  // defaults a loader took for fields the input left out

  bool has_architecture() const { return layers > 0; }
  bool is_moe() const { return experts > 1; }
  bool gated_mlp() const { return mlp == MlpKind::swiglu || mlp == MlpKind::geglu; }
  bool is_mla() const { return mla.kv_lora_rank > 0; }
  bool has_block_pattern() const { return !block_pattern.empty(); }
  bool is_moe_layer(int i) const {
    if (has_block_pattern()) return block_pattern[static_cast<size_t>(i)] == 'E';
    return is_moe() && i >= first_dense_layers &&
           (i - first_dense_layers + 1) % moe_layer_step == 0;
  }
  int moe_layer_count() const {
    int n = 0;
    for (int i = 0; i < layers; ++i) n += is_moe_layer(i) ? 1 : 0;
    return n;
  }
  bool is_hybrid() const { return full_attention_every > 1; }
  bool is_linear_attention_layer(int i) const {
    return is_hybrid() && (i + 1) % full_attention_every != 0;
  }
  int linear_attention_layer_count() const {
    return is_hybrid() ? layers - layers / full_attention_every : 0;
  }
  MixerKind mixer_of(int i) const {
    if (has_block_pattern()) {
      const char c = block_pattern[static_cast<size_t>(i)];
      return c == 'M' ? MixerKind::mamba2 : c == '*' ? MixerKind::attention : MixerKind::none;
    }
    return is_linear_attention_layer(i) ? linear.mixer : MixerKind::attention;
  }
  FfnKind ffn_of(int i) const {
    if (has_block_pattern()) {
      const char c = block_pattern[static_cast<size_t>(i)];
      return c == '-' ? FfnKind::mlp : c == 'E' ? FfnKind::moe : FfnKind::none;
    }
    return is_moe_layer(i) ? FfnKind::moe : FfnKind::mlp;
  }
  /// Layers whose mixer is `kind`: counted from the pattern's letters, or from the hybrid period
  /// (the search's rules ask it for every plan, so it does not visit each layer).
  int mixer_layer_count(MixerKind kind) const {
    if (has_block_pattern()) {
      const auto n = [this](char c) {
        return static_cast<int>(std::count(block_pattern.begin(), block_pattern.end(), c));
      };
      if (kind == MixerKind::mamba2) return n('M');
      if (kind == MixerKind::attention) return n('*');
      return kind == MixerKind::none ? layers - n('M') - n('*') : 0;
    }
    const int linear_layers = linear_attention_layer_count();
    if (kind == MixerKind::attention) return layers - linear_layers;
    return kind == linear.mixer ? linear_layers : 0;
  }
  /// Layers with a recurrent mixer (a gated DeltaNet, lightning attention or Mamba-2), whose
  /// state runs along the whole sequence.
  bool has_recurrent_mixer() const {
    return is_hybrid() || block_pattern.find('M') != std::string::npos;
  }
  int dense_mlp_width() const { return dense_ffn_hidden > 0 ? dense_ffn_hidden : ffn_hidden; }
  /// Per-head widths of the query/key dot product and of the values (MLA splits them).
  int qk_head_width() const {
    return is_mla() ? mla.qk_nope_head_dim + mla.qk_rope_head_dim : head_dim;
  }
  int v_head_width() const { return is_mla() ? mla.v_head_dim : head_dim; }
};

/// One point of a GEMM efficiency curve: a GEMM of `flops` reaches `efficiency` of peak.
struct EfficiencyPoint {
  double flops = 0;
  double efficiency = 0;
};

struct GpuSpec {
  std::string name;
  std::string source;
  double memory_bytes = 0;                       // total as nvidia-smi / rocm-smi reports it
  std::array<double, kMathDtypes> peak_flops{};  // dense, per second; 0 = not supported
  // The architecture ("hopper", "blackwell", "cdna3"): what a precision recipe's
  // gpu_generations name (precision.hpp); empty = not given.
  std::string generation;
  // The GPUs that share kernels and so the validation corpus's accuracy ("H100" for H100-SXM,
  // H100-PCIe and H200): what a framework profile's accuracy, kernels.speed_by_gpu and
  // max_published_mfu_by_gpu are keyed by (profile accuracy_class); empty = none declared, the
  // framework's figures beyond the corpus.
  std::string accuracy_class;
  double hbm_bytes_per_s = 0;
  std::vector<EfficiencyPoint> gemm_efficiency;  // ascending flops; interpolated in log(flops)
  double attention_efficiency = 0;               // fused (flash) attention kernels, share of peak
  // Its shape (compute.cpp attention_efficiency_at): e_max S / (S + half_seq) at a kernel's
  // causal sequence length S, times D / (D + half_head_dim) against head dim 128; 0 = flat.
  double attention_half_seq = 0;
  double attention_half_head_dim = 0;
  // The share of its GEMM efficiency curve (fitted at bf16) a GEMM in each math dtype reaches:
  // fp8 reaches a smaller fraction of its doubled peak (MAMF fp8 / fp8 peak against MAMF bf16 /
  // bf16 peak). 1 where no measurement says otherwise.
  std::array<double, kMathDtypes> gemm_dtype_share{1, 1, 1, 1, 1, 1, 1};
  // The share of that MAMF-derived level a training step's fp8 and fp4 GEMMs reach (casts,
  // scaling, smaller tiles than a best-shape sweep): a fitted constant (profiles/fit), 1 unfitted.
  double low_precision_gemm_factor = 1;
  // fp4 GEMMs' share beside fp8's (a scale per 16 elements where MXFP8 has one per 32, and a
  // per-tensor fp32 scale): a fitted constant (profiles/fit), 1 unfitted.
  double fp4_gemm_factor = 1;
  double memory_efficiency = 0;                  // streaming kernels, share of hbm_bytes_per_s
  double kernel_overhead_s = 0;                  // fixed cost per kernel launch
  // Streaming multiprocessors (AMD: compute units) a GEMM's output tiles are spread over: a GEMM
  // whose tiles do not fill its last wave pays for the whole wave. 0 = not given (no wave term).
  double sm_count = 0;
  double overlap_slowdown = 0;  // compute lost per second of communication it overlaps
  double context_bytes = 0;     // CUDA context + library workspaces, per process
  std::string intra_link;       // the node fabric this GPU comes with (a link preset)
  std::string inter_link;       // the scale-out network of its reference node
  HostSpec host;                // its reference node's host (clusterless GPUs)
  // The cluster preset this GPU ships in when it comes only as a system (a GB200 is a GB200
  // NVL72 rack's GPU): `--gpu GB200` without --cluster plans on that system's tiers.
  std::string system;
  bool calibrated = false;      // efficiencies replaced by probe measurements
  // A power-limited part: the share of its full-power sibling's GEMM, attention and memory
  // efficiencies it reaches (its profile ships the sibling's figures; the reader multiplies
  // them by this). 1: runs at its rated power. The fitted step-time constants may refine it.
  double power_derate = 1;
  // A public on-demand list price of one GPU-hour in USD (0: none in the profile), and where it
  // was read. A list price, not a quote: `provision --gpu-hour-cost` replaces it.
  double list_price_usd_per_gpu_hour = 0;
  std::string list_price_source;
};

/// One tier of the interconnect. Bandwidth is per GPU, one direction.
struct LinkSpec {
  std::string name;
  std::string source;
  double bytes_per_s = 0;        // nominal (datasheet) or as typed by the user
  double busbw_bytes_per_s = 0;  // what collectives reach (nccl-tests bus bandwidth)
  double latency_s = 0;          // per ring step
  // Measured by a probe, per collective (index: Collective); 0 = use busbw_bytes_per_s.
  std::array<double, 6> collective_busbw{};
  bool measured = false;    // busbw from a probe of this cluster
  // What the probe's bytes moved over when not GPU to GPU (its mpi back-end: "CPU shared memory
  // ..."); empty for GPU links and presets.
  std::string medium;
  bool user_given = false;  // typed by the user: used exactly as given
};

/// A cluster as three tiers (DESIGN "Topology is tiers"): a scale-up domain of GPUs that reach
/// each other over NVLink / NVSwitch / xGMI without a NIC (8 on a DGX, 72 on a GB200 NVL72
/// rack), made of hosts (one OS image and its CPUs, memory and NICs: what a launcher calls a
/// node; 8 GPUs on a DGX, 4 on a GB200 compute tray), joined by a scale-out network. On every
/// 8-GPU server the domain is the host; on rack-scale systems it holds several hosts.
/// Communication is priced on the smallest tier that holds a group (collectives.hpp); offload,
/// checkpoints and launchers read the host.
struct ClusterSpec {
  std::string name;
  std::string source;
  GpuSpec gpu;
  int gpus = 1;
  int gpus_per_node = 1;    // GPUs per host
  int gpus_per_domain = 0;  // GPUs per scale-up domain, a multiple of gpus_per_node; 0: the host
  LinkSpec intra;  // the scale-up domain's link (NVLink / PCIe / xGMI), per GPU
  LinkSpec nic;    // one scale-out NIC
  int nics_per_node = 1;  // scale-out NICs per host
  LinkSpec inter;  // scale-out per GPU: the host's NICs shared by its GPUs (see share_nics)
  HostSpec host;   // the host's memory, CPU-GPU link, DRAM and NVMe (offload)
  // Memory each device keeps free (--headroom): a plan fits when its peak (what the caching
  // allocator reserves) stays within usable_bytes(). 0: the whole device.
  double headroom_bytes = 0;

  /// What a plan may use of each device: its memory less the headroom asked for.
  double usable_bytes() const { return gpu.memory_bytes - headroom_bytes; }
  int nodes() const { return (gpus + gpus_per_node - 1) / gpus_per_node; }
  /// GPUs that share the scale-up link: what "TP inside the NVLink domain" reads.
  int domain_gpus() const { return gpus_per_domain > 0 ? gpus_per_domain : gpus_per_node; }
  int domains() const { return (gpus + domain_gpus() - 1) / domain_gpus(); }
  /// Whether the scale-up domain spans more than one host (NVL72 racks).
  bool rack_scale() const { return domain_gpus() > gpus_per_node; }
};

/// When ZeRO-2/3 (FSDP) reduces gradients under accumulation (--grad-sync): as the framework
/// does for the plan, after every micro-batch's backward, or once after the last (FSDP1
/// no_sync(), FSDP2 set_requires_gradient_sync(False) on all but the last micro-batch).
enum class GradSync { framework, every_micro_batch, deferred };

struct TrainingSpec {
  Precision precision = Precision::bf16;  // as the user named it (fp8: the framework's default)
  // The recipe row that prices it (profiles/precisions/*.json, loaded with the precision by
  // input's load_recipe); default-constructed: bf16 mixed precision.
  PrecisionRecipe recipe;
  OptimizerKind optimizer = OptimizerKind::adamw;
  AttentionKind attention = AttentionKind::flash;
  int seq_len = 0;
  int global_batch = 0;              // sequences per optimizer step
  bool fp32_grads = false;           // Megatron's fp32 main-gradient buffers (18 B/param, not 16)
  bool overlap_grad_reduce = true;   // DDP/FSDP bucketed overlap with backward
  bool overlap_param_gather = true;  // ZeRO-3/FSDP prefetch of the next layer's weights
  bool tp_comm_overlap = false;      // Transformer Engine userbuffer overlap of TP comm
  // The loss runs under torch.compile (torchtitan's compile.enable with its "loss" component):
  // priced by the framework profile's loss.compiled_peak_bytes_per_logit.
  bool compiled_loss = false;
  // Under TP, the LM head's vocabulary-sharded logits are all-gathered and every TP rank runs
  // the loss on the full vocabulary (torchtitan's parallelism.disable_loss_parallel; a column-
  // parallel LM head that gathers its output, as Aleph Alpha's scaling does). Else each rank
  // holds s x b x V/tp logits (Megatron's vocab-parallel cross-entropy, torchtitan's
  // loss_parallel).
  bool full_vocab_loss = false;
  // Which kernels run captured in CUDA graphs (framework.hpp CudaGraphs): priced by the framework
  // profile's kernels.cuda_graph_fixed_share on the fixed costs per layer.
  CudaGraphs cuda_graphs = CudaGraphs::none;
  double fragmentation = 0.05;       // allocator reserve beyond what tensors hold
  // ZeRO-2/3 (FSDP) under gradient accumulation: reduce-scatter every micro-batch (sharded
  // gradients only), or defer it to the last (FSDP1 no_sync / FSDP2
  // set_requires_gradient_sync(False): unsharded gradients held across micro-batches);
  // framework: the framework profile's default for the plan.
  GradSync grad_sync = GradSync::framework;
  // Mixture of experts: 0 = dropless (Megatron-Core's default) with routing assumed balanced;
  // c > 0 = each expert takes at most c x its even share of tokens, padded to that capacity
  // (--moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity), so GEMM rows and
  // all-to-all volume are c x the even share.
  double moe_capacity_factor = 0;
  // The busiest expert's tokens over the even share (the max-load factor the slowest EP rank
  // waits for); 0: the framework profile's default from published routing statistics; 1: forced
  // balance, as vendor benchmarks run.
  double moe_max_load = 0;
  // Dispatch all-to-all in fp8 (DeepSeek-V3 report, Sec. 3.3: dispatch in FP8, combine in BF16).
  bool moe_fp8_dispatch = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  // How the stack runs context parallelism (cp > 1): ring attention or Ulysses all-to-alls.
  ContextParallel context_parallel = ContextParallel::ring;
  double tokens = 0;           // training budget for time-to-train, 0 = not asked
  double gpu_hour_cost = 0;    // currency per GPU-hour, 0 = not asked
  FrameworkProfile framework;  // the stack that runs the plan (default: the ideal one)
};

/// Tokens per optimizer step when the user names no global batch: 4M (2^22), the batch Llama 2
/// trained every size with (Touvron et al. 2023, Sec. 2.2 and Table 1: "global batch-size of 4M
/// tokens") and Llama 3 405B's initial batch (Dubey et al. 2024, Sec. 3.4.1: 4M tokens in
/// sequences of 4,096). A fixed token count, not a share of the GPUs, so adding GPUs never
/// changes what is being trained.
inline constexpr double kDefaultTokensPerStep = 4.0 * 1024 * 1024;

/// Sequences per step that hold kDefaultTokensPerStep at `seq_len` (at least 1), rounded up to
/// a multiple of `multiple_of` (data-parallel degree x micro-batch, when a plan is fixed).
int default_global_batch(int seq_len, int multiple_of = 1);

struct ParallelPlan {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int cp = 1;  // context parallel (how it splits attention: TrainingSpec::context_parallel)
  int ep = 1;  // expert parallel, carved out of dp
  // Expert tensor parallel (Megatron-Core's --expert-tensor-parallel-size): how many ranks split
  // each expert's matrices; 0 = the same as tp. Experts span ep x etp ranks of tp x dp x cp.
  int etp = 0;
  int expert_tp() const { return etp > 0 ? etp : tp; }
  int zero = 0;
  // Hybrid sharding (HSDP): ZeRO shards over groups of this many data-parallel ranks and
  // replicates across dp / dp_shard of them (PyTorch FSDP HYBRID_SHARD; FSDP2 on a 2-D
  // (replicate, shard) mesh, torchtitan's data_parallel_replicate_degree x
  // data_parallel_shard_degree). 0: shard over the whole data-parallel group.
  int dp_shard = 0;
  int shard_degree() const { return dp_shard > 0 ? dp_shard : dp; }
  int dp_replicate() const { return dp / std::max(1, shard_degree()); }
  bool hybrid_shard() const { return dp_shard > 0 && dp_shard < dp; }
  int micro_batch = 1;
  Recompute recompute = Recompute::none;
  // Under selective recompute, the RecomputeModule bits recomputed; 0: the framework's own
  // selective recompute (Megatron: core_attn; torchtitan: its op policy).
  unsigned recompute_modules = 0;
  bool sequence_parallel = false;
  int interleave = 1;  // virtual pipeline stages per device
  Schedule schedule = Schedule::one_f_one_b;
  // Transformer layers of the first and the last virtual pipeline stage (the model chunk that
  // holds the embedding, and the one that holds the LM head and loss); -1: an even split.
  int first_stage_layers = -1;
  int last_stage_layers = -1;
  Offload offload = {};  // none
  // EP dispatch / combine hidden behind another micro-batch's compute (DualPipe's F&B pairs;
  // Megatron-Core's --overlap-moe-expert-parallel-comm); false: each all-to-all waits.
  bool moe_a2a_overlap = false;

  int gpus() const { return dp * tp * pp * cp; }
};

/// Sets cluster.inter to each GPU's share of the node's NICs: nic x nics_per_node / gpus_per_node.
void share_nics(ClusterSpec& cluster);

// Names as users type them; parse_* throw InputError naming `field` with the valid names.
const char* to_string(MlpKind v);
const char* to_string(NormKind v);
const char* to_string(PositionKind v);
const char* to_string(MixerKind v);
const char* to_string(RopeScaling v);
const char* to_string(RouterScore v);
const char* to_string(MoeDispatcher v);
const char* to_string(CudaGraphs v);
const char* to_string(ContextParallel v);
const char* to_string(Precision v);
const char* to_string(OptimizerKind v);
const char* to_string(Recompute v);
const char* to_string(AttentionKind v);
const char* to_string(MathDtype v);
const char* to_string(Schedule v);
const char* to_string(OffloadTarget v);
const char* to_string(GradSync v);
MlpKind parse_mlp(const std::string& text, const std::string& field);
NormKind parse_norm(const std::string& text, const std::string& field);
PositionKind parse_positions(const std::string& text, const std::string& field);
MixerKind parse_mixer(const std::string& text, const std::string& field);
RopeScaling parse_rope_scaling(const std::string& text, const std::string& field);
RouterScore parse_router_score(const std::string& text, const std::string& field);
MoeDispatcher parse_moe_dispatcher(const std::string& text, const std::string& field);
CudaGraphs parse_cuda_graphs(const std::string& text, const std::string& field);
ContextParallel parse_context_parallel(const std::string& text, const std::string& field);
Precision parse_precision(const std::string& text, const std::string& field);
/// Every precision `--precision` names, in the table's order (the fp8 alias among them).
std::vector<Precision> all_precisions();
/// Their names joined by `separator` ("fp32 | bf16 | ..."), for help and messages.
std::string precision_names(std::string_view separator);
OptimizerKind parse_optimizer(const std::string& text, const std::string& field);
Recompute parse_recompute(const std::string& text, const std::string& field);
/// Megatron's module names ("layernorm", "mla_up_proj") to RecomputeModule bits, from a list or
/// from one text with commas or spaces between them; and back, in the table's order.
unsigned parse_recompute_modules(const std::vector<std::string>& names, const std::string& field);
unsigned parse_recompute_modules(const std::string& text, const std::string& field);
std::vector<std::string> recompute_module_list(unsigned modules);
std::string recompute_modules_text(unsigned modules, const std::string& separator = ",");
/// Every module name, for help texts and errors.
std::string recompute_module_names(const std::string& separator);
/// The modules the plan recomputes: none without selective recompute, core_attn for the
/// framework default (0).
unsigned recomputed_modules(const ParallelPlan& plan);
AttentionKind parse_attention(const std::string& text, const std::string& field);
Schedule parse_schedule(const std::string& text, const std::string& field);
OffloadTarget parse_offload_target(const std::string& text, const std::string& field);
GradSync parse_grad_sync(const std::string& text, const std::string& field);

/// The busiest expert rank's tokens over its even share: the training's factor, 1 (balanced)
/// when it names none.
double moe_max_load(const TrainingSpec& training);
/// Whether the recipe the training spec carries is the one its precision names (fp8: any FP8
/// recipe, the framework's default); the engine checks it before pricing.
bool recipe_matches(const TrainingSpec& tr);

/// The plan as validation's reach reads it (framework.hpp): MoE or dense, the GEMM element type,
/// the context-parallel degree and the cluster's GPU count.
PlanScope plan_scope(const ModelSpec& model, const TrainingSpec& training, const ParallelPlan& plan,
                     const ClusterSpec& cluster);

}  // namespace shardplan
