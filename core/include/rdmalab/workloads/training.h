// Training-step workloads: the traffic of data-parallel (with tensor-parallel and MoE options)
// and pipeline-parallel training, with compute modelled from FLOP counts. docs/training.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rdmalab/workload.h"

namespace rdmalab::workloads {

void register_training(WorkloadRegistry& registry);

// One layer as the step sees it: its parameters (gradient size) and its forward FLOPs per sample
// (per image, or per token for language models). Backward costs twice the forward.
struct ModelLayer {
  std::string name;
  std::uint64_t params = 0;
  double fwd_flops_per_sample = 0;
  // A transformer decoder layer's four linear layers, in forward order: query/key/value, attention
  // output, MLP up (with the gate), MLP down; their parameters (0: not a transformer layer).
  std::array<std::uint64_t, 4> linear{};
};

struct ModelPreset {
  std::string name;
  std::string source;  // where the numbers come from
  std::string sample;  // "image" or "token"
  std::uint64_t default_batch = 0;       // samples per GPU per step
  std::uint64_t activation_per_sample = 0;  // bytes crossing a pipeline stage boundary per sample (bf16)
  std::uint64_t sequence = 0;               // tokens per sequence (language models), 0 for images
  std::vector<ModelLayer> layers;
  std::uint64_t total_params() const;
};

const std::vector<ModelPreset>& model_presets();
const ModelPreset* find_preset(const std::string& name);

// A published, measured training throughput of one GPU: a model preset on a named GPU
// (fabric.gpu.model) at a precision and a batch per GPU, with its source. A training step's
// compute comes from here when one matches (docs/training.md).
struct MeasuredThroughput {
  std::string model, gpu, precision;  // training.model, fabric.gpu.model, training.precision
  std::uint64_t batch = 0;            // samples per GPU per step
  double samples_per_s = 0;           // one GPU, compute only (no other GPU to talk to)
  std::string source;
};
const std::vector<MeasuredThroughput>& measured_throughputs();
// The entry for (model, gpu, precision) whose batch is nearest `batch` (equal when one is), or
// nullptr.
const MeasuredThroughput* find_throughput(const std::string& model, const std::string& gpu, const std::string& precision,
                                          std::uint64_t batch);

// A transformer preset's layer measured on a named GPU: one tensor-parallel rank's forward and
// backward of one decoder layer (and of the output layer with its loss) for one micro-batch of
// full sequences, with no communication in it (scripts/gpu/transformer_layer.py; docs/training.md,
// "Measured layers"). A language model's step computes from here.
struct MeasuredLayer {
  std::string model, gpu, precision;  // training.model, fabric.gpu.model, training.precision (amp: bf16; fp8)
  int tp = 1;                         // tensor-parallel ranks the layer is split over
  std::uint64_t micro_batch = 1;      // sequences
  double fwd_s = 0, bwd_s = 0;        // one decoder layer
  double head_fwd_s = 0, head_bwd_s = 0;  // the output layer (vocabulary / tp) and the loss
  std::string source;
};
const std::vector<MeasuredLayer>& measured_layers();
// The entry for (model, gpu, precision, tp) whose micro-batch is nearest `micro_batch`, or nullptr.
const MeasuredLayer* find_layer(const std::string& model, const std::string& gpu, const std::string& precision, int tp,
                                std::uint64_t micro_batch);

}  // namespace rdmalab::workloads
