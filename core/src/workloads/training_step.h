// The training steps' shared part (training.cc registers them): parameters, compute, plans of a
// group's collectives, the timeline. Internal to core/src/workloads.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "engine.h"
#include "rdmalab/workloads/training.h"
#include "rdmalab/gpus.h"
#include "rdmalab/progress.h"
#include "rdmalab/trace.h"
#include "rdmalab/units.h"
#include "rdmalab/workloads/common.h"
#include "rdmalab/workloads/tuning.h"

namespace rdmalab::workloads::training_detail {

// Channels keep the communicators of one rank apart (the same pair of ranks may meet in two):
// each communicator has a block of 100, room for NCCL's channels (at most 64) or the double
// binary tree's two.
inline constexpr int kChanDp = 0;
inline constexpr int kChanTp = 100;
inline constexpr int kChanMoe = 200;
inline constexpr int kChanPp = 300;
inline constexpr int kChanGather = 400;  // train_fsdp's all-gathers (FSDP's unshard stream)

struct Params {
  std::vector<ModelLayer> layers;
  std::string model;
  std::uint64_t batch = 0;  // samples per rank per step
  double gpu_rate = 0;      // FLOP/s
  double layer_time = -1;   // forward seconds per layer when given
  double measured_rate = 0;  // samples/s of one GPU (measured_throughputs()), when compute comes from there
  const MeasuredLayer* measured_layer = nullptr;  // a transformer layer measured on this GPU (measured_layers())
  std::uint64_t sequence = 0;                     // tokens per sequence (the preset's), for measured layers
  double fwd_flops = 0;      // forward FLOPs per sample, all layers
  std::string compute_source;
  const GpuSpec* gpu = nullptr;  // fabric.gpu.model, if named
  std::string precision;
  std::optional<Protocol> proto;
  bool chunk_set = false;
  std::uint64_t bucket = 0;
  std::uint64_t first_bucket = 0;  // DDP's first bucket (the last layers' gradients)
  bool reshard_after_forward = true;  // train_fsdp: FULL_SHARD (true) or SHARD_GRAD_OP
  int tp = 1;
  std::uint64_t moe_bytes = 0;
  std::uint64_t tp_bytes = 0;  // activations all-reduced per layer in tensor parallel
  int microbatches = 8;
  std::uint64_t activation = 0;  // bytes per micro-batch across a stage boundary
  double slice = 20e-6;
  std::uint64_t steps = 3, warmup = 1;
  DataType dtype = DataType::fp32;
  std::optional<Algorithm> algo;
  std::optional<int> channels;  // workload.channels (train_dp's all-reduces); none: NCCL's (auto_channels)
  std::uint64_t chunk = 512 * 1024;
  std::uint32_t slots = 8;
  MemoryKind memory = MemoryKind::host;
  bool phantom = false;  // workload.payload: phantom (no bytes)
  bool verify = true;
  double timeout = 30;
  std::uint64_t seed = 1;
};

// A transformer's decoder layer (or a custom layer): neither the embedding nor the output layer.
inline bool is_decoder_layer(const ModelLayer& l) { return l.name != "embedding" && l.name != "lm_head"; }

Params read_params(const Scenario& sc);
// This rank's parameters: a straggler (training.stragglers) computes straggler_factor times slower.
Params params_for_rank(const Scenario& sc, int rank);
// What a row says of the stragglers: "ranks 3, 7 compute 1.2x slower".
void add_straggler_note(ResultRow& row, const Scenario& sc);
// Seconds of layer l's forward and backward for `samples` samples on one rank (one of
// training.tensor_parallel ranks sharing the layer).
double fwd_time(const Params& p, const ModelLayer& l, double samples);
double bwd_time(const Params& p, const ModelLayer& l, double samples);
// The micro-batch (sequences) a rank computes at once: the whole batch, or in train_pp one of
// training.microbatches.
std::uint64_t micro_batch_sequences(const Params& p, bool pipeline);
// A plan built in group ranks, mapped to the group's global ranks and its block of channels.
Plan to_group(Plan plan, const std::vector<int>& members, int chan_base);
// The plan of a collective over a group, as NCCL's tuning model picks it (unless the scenario
// names it): an all-reduce in place, an all-gather or a reduce-scatter out of place.
Plan tuned_collective(RankEnv& env, const Params& p, Collective coll, const std::vector<int>& members, int me, std::uint64_t count,
                      std::size_t es, int chan_base, std::string* what = nullptr);
// A plan over a group of ranks.
Plan group_plan(Collective coll, Algorithm algo, const std::vector<int>& members, int me, std::uint64_t count, std::size_t es, bool in_place,
                int chan_base);
// The engine of a training step whose collectives reduce (sums in workload.dtype): chunk, slots,
// memory, payload and timeout from the scenario; `what` names the workload in messages.
EngineConfig reducing_engine(const Params& p, const char* what);
// Adds the seconds a compute phase takes, progressing the engine between slices.
Status compute_overlapped(RankEnv& env, CollectiveEngine& eng, const Params& p, double seconds, const std::function<void()>& after_slice = {});

// One rank's timed steps: step, compute and communication seconds of each.
struct StepTimes {
  double step = 0, compute = 0, comm = 0;
};
// Every rank's mean over its timed steps, with the elements it found wrong (collective: every
// rank calls it; each gets every rank's).
struct RankReport {
  double step = 0, compute = 0, comm = 0;
  std::uint64_t wrong = 0;
};
Result<std::vector<RankReport>> gather_means(RankEnv& env, const std::vector<StepTimes>& timed, std::uint64_t wrong);

// A step's timeline (rank 0's last timed step, for the dashboard): "name start end" in ms from
// the step's start, ';' between phases. Names: forward, backward, bucket <i>, exposed.
struct Phase {
  std::string name;
  double start = 0, end = 0;
};
std::string timeline_text(const std::vector<Phase>& phases);
// The compute's source, model TFLOP/s per GPU and MFU.
void add_compute_figures(ResultRow& row, const Params& p, double flops_per_gpu);

// Data parallel (training_dp.cc), pipeline parallel (training_pp.cc) and fully sharded data
// parallel (training_fsdp.cc) steps.
Status run_dp(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows);
Status run_pp(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows);
Status run_fsdp(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows);
// Megatron-LM's 3D parallel step (training_3d.cc).
Status run_3d(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows);

}  // namespace rdmalab::workloads::training_detail
