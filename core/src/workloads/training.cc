// Training-step workloads.
//
// train_dp: every rank runs forward, then backward layer by layer in reverse; each layer's
// gradients join a bucket, and a full bucket is all-reduced at once (PyTorch DDP's scheme) while
// the backward pass goes on. Compute is modelled from FLOPs and a GPU rate (runtime.compute: real
// time on hardware, simulated time on SimGrid); while collectives are in flight the compute is
// cut into slices and the engine progresses between them, as NCCL runs beside the kernels.
// Options: tensor parallelism inside groups of consecutive ranks (two blocking all-reduces of the
// activations per layer forward and backward, Megatron-LM's layout) and mixture-of-experts
// (two all-to-alls per layer forward and backward).
//
// train_pp: the ranks are the stages of one pipeline; micro-batches flow with the 1F1B schedule
// (PipeDream-Flush / Megatron-LM): activations forward, gradients backward, point to point.
//
// train_fsdp: fully sharded data parallel (PyTorch FSDP, ZeRO-3 or ZeRO-2): each layer's
// parameters all-gathered before its forward (and again before its backward with FULL_SHARD),
// its gradients reduce-scattered after its backward (training_fsdp.cc).
#include "rdmalab/workloads/training.h"

#include <fmt/format.h>

#include "training_step.h"

namespace rdmalab::workloads {
namespace {

using namespace training_detail;

enum class Step { dp, pp, fsdp, megatron };

Status check_training(const Scenario& sc, const Capabilities& caps, int ranks, Step kind) {
  const bool pipeline = kind == Step::pp;
  if (!caps.rdma_write_imm) return sc.error("workload.type", "training steps move data as RDMA writes with immediate, which this backend does not offer");
  const std::string model = sc.get_string("training.model");
  if (model == "custom") {
    if (!sc.is_set("training.layers")) return sc.error("training.model", "custom needs training.layers: parameters per layer, e.g. [1000000, 4000000]");
    if (sc.is_set("training.layer_flops") && sc.get_ints("training.layer_flops").size() != sc.get_ints("training.layers").size())
      return sc.error("training.layer_flops", "give one FLOP count per layer of training.layers");
  } else if (sc.is_set("training.layers")) {
    return sc.error("training.layers", fmt::format("training.model is the preset '{}': set training.model: custom to give layers", model));
  }
  const std::string precision = sc.get_string("training.precision");
  const GpuSpec* g = find_gpu(sc.get_string("fabric.gpu.model"));
  if (precision == "fp8" && (!g || g->fp8_flops <= 0))
    return sc.error("training.precision", g ? fmt::format("the {} has no FP8 tensor cores: amp or tf32", g->product)
                                            : std::string("fp8 needs a GPU that has FP8 tensor cores: name it (fabric.gpu.model: h100 or h200)"));
  if (g) {
    const double peak = g->peak_flops(precision);
    if (sc.is_set("training.gpu_flops") && sc.get_number("training.gpu_flops") > peak)
      return sc.error("training.gpu_flops", fmt::format("{:.4g} TFLOP/s is above the {}'s dense {} peak of {:.4g} TFLOP/s ({})",
                                                        sc.get_number("training.gpu_flops") / 1e12, g->product,
                                                        precision == "tf32" ? "TF32" : precision == "fp8" ? "FP8" : "FP16/BF16", peak / 1e12,
                                                        g->source));
    // No measured throughput of the model on this GPU (at any batch: the nearest is used) and no
    // rate given: no default rate could claim to be this GPU's (400 TFLOP/s is above an A100's
    // peak), so the scenario says it.
    // A transformer's layers are measured per tensor-parallel split (the shapes change with it).
    const int tp_run = static_cast<int>(sc.get_int("training.tensor_parallel"));
    if (model != "custom" && !sc.is_set("training.gpu_flops") && !sc.is_set("training.layer_time") &&
        !find_throughput(model, g->name, precision, 0) && !find_layer(model, g->name, precision, tp_run, 1)) {
      std::string known;
      for (const auto& m : measured_throughputs())
        known += fmt::format("{}{} on {} ({})", known.empty() ? "" : ", ", m.model, m.gpu, m.precision);
      std::string layers;
      for (const auto& m : measured_layers()) {
        const std::string one = fmt::format("{} on {} ({}, tp {})", m.model, m.gpu, m.precision, m.tp);
        if (layers.find(one) == std::string::npos) layers += (layers.empty() ? "" : ", ") + one;
      }
      return sc.error("training.model", fmt::format("rdmalab has no measured throughput of {} on the {} in {}{}: give training.gpu_flops "
                                                    "(at most {:.4g} TFLOP/s) or training.layer_time; measured: {}{}{} (docs/training.md)",
                                                    model, g->product, precision, tp_run > 1 ? fmt::format(" at tensor parallel {}", tp_run) : "",
                                                    peak / 1e12, known, layers.empty() ? "" : "; layers: ", layers));
    }
  }
  const int tp = static_cast<int>(sc.get_int("training.tensor_parallel"));
  if (pipeline) {
    if (ranks < 2) return sc.error("fabric.nodes", "a pipeline needs at least 2 stages (ranks)");
    if (tp != 1) return sc.error("training.tensor_parallel", "train_pp runs one pipeline over the ranks: tensor parallelism is a train_dp option");
    if (sc.get_size("training.moe_alltoall") != 0) return sc.error("training.moe_alltoall", "MoE all-to-all is a train_dp option");
    std::size_t layers = model == "custom" ? sc.get_ints("training.layers").size() : find_preset(model)->layers.size();
    if (layers < static_cast<std::size_t>(ranks))
      return sc.error("fabric.nodes", fmt::format("{} stages but the model has {} layers: at most one stage per layer", ranks, layers));
  } else if (kind == Step::megatron) {
    const int pp = static_cast<int>(sc.get_int("training.pipeline_parallel")), v = static_cast<int>(sc.get_int("training.virtual_stages"));
    const int m = static_cast<int>(sc.get_int("training.microbatches"));
    if (ranks % (tp * pp) != 0)
      return sc.error("training.pipeline_parallel", fmt::format("tensor parallel {} x pipeline {} does not divide {} ranks", tp, pp, ranks));
    const ModelPreset* preset = model == "custom" ? nullptr : find_preset(model);
    if (preset && preset->sequence == 0)
      return sc.error("training.model", fmt::format("train_3d is Megatron-LM's layout of a transformer; '{}' is not one (use train_dp)", model));
    if (v > 1 && pp < 2) return sc.error("training.virtual_stages", "virtual stages interleave a pipeline: set training.pipeline_parallel to 2 or more");
    if (v > 1 && m % pp != 0)
      return sc.error("training.microbatches", fmt::format("the interleaved schedule needs micro-batches in multiples of the {} stages (Megatron-LM's rule); {} is not", pp, m));
    std::size_t decoder = 0;
    if (preset) {
      decoder = static_cast<std::size_t>(std::count_if(preset->layers.begin(), preset->layers.end(), is_decoder_layer));
    } else {
      decoder = sc.get_ints("training.layers").size();
    }
    if (decoder < static_cast<std::size_t>(pp * v))
      return sc.error("training.virtual_stages", fmt::format("{} stages x {} chunks but the model has {} layers: at least one layer per chunk", pp, v, decoder));
    if (sc.get_size("training.moe_alltoall") != 0) return sc.error("training.moe_alltoall", "MoE all-to-all is a train_dp option");
    if (sc.get_bool("training.tp_overlap") && !preset)
      return sc.error("training.tp_overlap", "overlap pairs each collective with a transformer layer's linear layer: give a transformer preset "
                                             "(gpt3-175b, llama2-70b), not custom layers");
    if (sc.get_bool("training.tp_overlap") && tp == 1)
      return sc.error("training.tp_overlap", "there are no tensor-parallel collectives to overlap: training.tensor_parallel is 1");
  } else if (kind == Step::dp) {
    if (ranks % tp != 0)
      return sc.error("training.tensor_parallel", fmt::format("tensor-parallel groups of {} do not divide {} ranks", tp, ranks));
    if (sc.is_set("training.microbatches")) return sc.error("training.microbatches", "micro-batches are for train_pp and train_3d");
  }
  bool channels_ok = true;
  parse_channels(sc.get_string("workload.channels"), channels_ok);
  if (!channels_ok)
    return sc.error("workload.channels", fmt::format("'{}' is not a channel count: auto, or a whole number from 1 to 64 (NCCL's "
                                                     "MAXCHANNELS)", sc.get_string("workload.channels")));
  const std::string alg = sc.get_string("workload.algorithm");
  if ((kind == Step::fsdp || kind == Step::megatron) && alg != "auto" && alg != "ring")
    return sc.error("workload.algorithm", fmt::format("{}'s all-gathers and reduce-scatters run NCCL's ring; allowed: auto, ring (not '{}')",
                                                      kind == Step::fsdp ? "FSDP" : "Megatron-LM", alg));
  if (alg != "auto" && alg != "ring" && alg != "tree" && alg != "rhd")
    return sc.error("workload.algorithm", fmt::format("the gradient all-reduce has no algorithm '{}'; allowed: auto, ring, tree, rhd", alg));
  if (sc.is_set("workload.duration")) return sc.error("workload.duration", "training runs a number of steps: give workload.iterations");
  if (sc.is_set("training.stragglers") != sc.is_set("training.straggler_factor"))
    return sc.is_set("training.stragglers")
               ? sc.error("training.stragglers", "how much slower? set training.straggler_factor too, e.g. 1.2 for 20 % slower")
               : sc.error("training.straggler_factor", "which ranks? set training.stragglers too, e.g. [3]");
  if (sc.is_set("training.stragglers"))
    for (auto r : sc.get_ints("training.stragglers"))
      if (r >= ranks) return sc.error("training.stragglers", fmt::format("rank {} is not in the job: ranks 0 to {}", r, ranks - 1));
  return check_memory(sc, caps);
}

// The keys a training step reads: the model's, and the collective's that carry its gradients.
std::vector<std::string> training_reads(Step kind) {
  std::vector<std::string> keys = {"training.model",      "training.layers",   "training.layer_flops", "training.batch",
                                   "training.precision",  "training.gpu_flops", "training.layer_time", "training.progress_interval",
                                   "training.stragglers", "training.straggler_factor",
                                   "workload.iterations", "workload.warmup",    "workload.dtype",      "workload.protocol",
                                   "workload.algorithm",  "workload.chunk",     "workload.slots",      "workload.verify",
                                   "workload.memory",     "workload.payload",   "workload.gpu_path",   "workload.timeout"};
  switch (kind) {
    case Step::pp:
      keys.insert(keys.end(), {"training.microbatches", "training.activation", "training.tensor_parallel", "training.moe_alltoall"});
      break;
    case Step::dp:
      keys.insert(keys.end(), {"training.bucket", "training.first_bucket", "training.activation", "training.tensor_parallel",
                               "training.moe_alltoall", "workload.channels"});  // channels: the all-reduces' rings
      break;
    case Step::fsdp:
      keys.insert(keys.end(), {"training.sharding", "workload.channels"});
      break;
    case Step::megatron:
      keys.insert(keys.end(), {"training.tensor_parallel", "training.pipeline_parallel", "training.virtual_stages", "training.tp_overlap", "training.microbatches",
                               "training.activation", "training.moe_alltoall", "workload.channels"});
      break;
  }
  return keys;
}

}  // namespace

void register_training(WorkloadRegistry& reg) {
  WorkloadInfo dp;
  dp.name = "train_dp";
  dp.description = "data-parallel training step: bucketed gradient all-reduce overlapping backward (+ tensor parallel, MoE)";
  dp.kind = WorkloadKind::training;
  dp.check = [](const Scenario& sc, const Capabilities& caps, int ranks) { return check_training(sc, caps, ranks, Step::dp); };
  dp.run = run_dp;
  dp.reads = training_reads(Step::dp);
  reg.add(std::move(dp));
  WorkloadInfo pp;
  pp.name = "train_pp";
  pp.description = "pipeline-parallel training step: 1F1B micro-batches stage to stage, bubble reported";
  pp.kind = WorkloadKind::training;
  pp.check = [](const Scenario& sc, const Capabilities& caps, int ranks) { return check_training(sc, caps, ranks, Step::pp); };
  pp.run = run_pp;
  pp.reads = training_reads(Step::pp);
  reg.add(std::move(pp));
  WorkloadInfo fsdp;
  fsdp.name = "train_fsdp";
  fsdp.description = "fully sharded data-parallel training step (FSDP / ZeRO): parameters all-gathered per layer, gradients reduce-scattered";
  fsdp.kind = WorkloadKind::training;
  fsdp.check = [](const Scenario& sc, const Capabilities& caps, int ranks) { return check_training(sc, caps, ranks, Step::fsdp); };
  fsdp.run = run_fsdp;
  fsdp.reads = training_reads(Step::fsdp);
  reg.add(std::move(fsdp));
  WorkloadInfo megatron;
  megatron.name = "train_3d";
  megatron.description =
      "Megatron-LM 3D parallel training step: sequence-parallel tensor parallel x (interleaved) 1F1B pipeline x distributed-optimizer data parallel";
  megatron.kind = WorkloadKind::training;
  megatron.check = [](const Scenario& sc, const Capabilities& caps, int ranks) { return check_training(sc, caps, ranks, Step::megatron); };
  megatron.run = run_3d;
  megatron.reads = training_reads(Step::megatron);
  reg.add(std::move(megatron));
}

}  // namespace rdmalab::workloads
