// Model presets for the training workloads, each number next to where it comes from.
#include <string>

#include "rdmalab/workloads/training.h"

namespace rdmalab::workloads {

std::uint64_t ModelPreset::total_params() const {
  std::uint64_t n = 0;
  for (const auto& l : layers) n += l.params;
  return n;
}

namespace {

// A decoder-only transformer layer: attention (q, k, v, o projections; k and v narrower with
// grouped-query attention) and the MLP (two matrices, or three with a gated unit), plus norms.
// Forward FLOPs per token: 2 per parameter for the matrix products, plus attention over the
// context: 2 * 2 * seq * d (scores and weighted sum).
ModelLayer transformer_layer(int i, std::uint64_t d, std::uint64_t kv_dim, std::uint64_t ffn, int mlp_matrices, std::uint64_t seq,
                             std::uint64_t norm_params) {
  ModelLayer l;
  l.name = "layer" + std::to_string(i);
  l.params = 2 * d * d + 2 * d * kv_dim + static_cast<std::uint64_t>(mlp_matrices) * d * ffn + norm_params;
  l.fwd_flops_per_sample = 2.0 * static_cast<double>(l.params) + 4.0 * static_cast<double>(seq) * static_cast<double>(d);
  return l;
}

std::vector<ModelPreset> build() {
  std::vector<ModelPreset> out;
  {
    // ResNet-50 (He et al., 2016), torchvision's resnet50: 25,557,032 parameters, 4.09 GMACs per
    // 224x224 image. Parameters per stage are torchvision's exactly (conv1+bn1, layer1..layer4, fc);
    // the split of the MACs over the stages is approximate (it sums to 4.09 G).
    ModelPreset p;
    p.name = "resnet50";
    p.source = "He et al. 2016; torchvision resnet50 (25,557,032 parameters, 4.09 GMACs/image)";
    p.sample = "image";
    p.default_batch = 64;
    p.activation_per_sample = 2048 * 7 * 7 * 2;  // layer4 output, bf16
    const double gmac = 1e9;
    p.layers = {
        {"conv1", 9536, 2 * 0.118 * gmac},
        {"layer1", 215808, 2 * 0.680 * gmac},
        {"layer2", 1219584, 2 * 1.030 * gmac},
        {"layer3", 7098368, 2 * 1.470 * gmac},
        {"layer4", 14964736, 2 * 0.790 * gmac},
        {"fc", 2049000, 2 * 0.002 * gmac},
    };
    out.push_back(std::move(p));
  }
  {
    // GPT-3 175B (Brown et al., 2020, Table 2.1): 96 layers, d_model 12288, 96 heads, context 2048,
    // vocabulary 50257 (GPT-2's BPE), MLP 4*d; tied input/output embedding.
    // 96 * 12 * 12288^2 + 50257 * 12288 = 174.6 G parameters.
    ModelPreset p;
    p.name = "gpt3-175b";
    p.source = "Brown et al. 2020, Table 2.1 (n_layers 96, d_model 12288, n_ctx 2048)";
    p.sample = "token";
    p.default_batch = 2048;  // one sequence per GPU per step
    const std::uint64_t d = 12288, seq = 2048;
    p.sequence = seq;
    p.activation_per_sample = d * 2;  // one token's hidden state, bf16
    p.layers.push_back({"embedding", 50257 * d, 0});
    for (int i = 0; i < 96; ++i) p.layers.push_back(transformer_layer(i, d, d, 4 * d, 2, seq, 4 * d));
    out.push_back(std::move(p));
  }
  {
    // Llama 2 70B (Touvron et al., 2023; the released config): 80 layers, hidden 8192, 64 heads
    // with 8 key/value heads (grouped-query attention: k and v are 8192 x 1024), SwiGLU MLP of
    // 28672 (three matrices), vocabulary 32000, untied embeddings, context 4096. 68.98 G parameters.
    ModelPreset p;
    p.name = "llama2-70b";
    p.source = "Touvron et al. 2023; released config (hidden 8192, intermediate 28672, 80 layers, 8 KV heads, vocab 32000)";
    p.sample = "token";
    p.default_batch = 4096;
    const std::uint64_t d = 8192, seq = 4096;
    p.sequence = seq;
    p.activation_per_sample = d * 2;
    p.layers.push_back({"embedding", 32000 * d, 0});
    for (int i = 0; i < 80; ++i) p.layers.push_back(transformer_layer(i, d, 1024, 28672, 3, seq, 2 * d));
    p.layers.push_back({"lm_head", 32000 * d + d, 2.0 * 32000 * d});
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

const std::vector<MeasuredThroughput>& measured_throughputs() {
  // One GPU alone, so the figure is compute (and the framework's own overheads) with no
  // communication in it; the step's communication is what rdmalab models on top.
  static const std::vector<MeasuredThroughput> table = {
      // NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5/README.md,
      // "Training performance: NVIDIA DGX A100 (8x A100 80GB)", pytorch-21.03 NGC container,
      // batch 256 per GPU: 1 GPU 2470 img/s mixed precision, 938 img/s TF32.
      {"resnet50", "a100", "amp", 256, 2470,
       "NVIDIA DeepLearningExamples ResNet-50 v1.5 (PyTorch, pytorch-21.03): 1x A100 80GB, AMP, batch 256: 2470 img/s"},
      {"resnet50", "a100", "tf32", 256, 938,
       "NVIDIA DeepLearningExamples ResNet-50 v1.5 (PyTorch, pytorch-21.03): 1x A100 80GB, TF32, batch 256: 938 img/s"},
  };
  return table;
}

const MeasuredThroughput* find_throughput(const std::string& model, const std::string& gpu, const std::string& precision,
                                          std::uint64_t batch) {
  const MeasuredThroughput* best = nullptr;
  auto distance = [&](const MeasuredThroughput& m) { return m.batch > batch ? m.batch - batch : batch - m.batch; };
  for (const auto& m : measured_throughputs())
    if (m.model == model && m.gpu == gpu && m.precision == precision && (!best || distance(m) < distance(*best))) best = &m;
  return best;
}

const std::vector<MeasuredLayer>& measured_layers() {
  // Measured by rdmalab on a lent GPU: scripts/gpu/transformer_layer.py (docs/training.md,
  // "Measured layers", has the command, the card and the checks). Milliseconds, medians.
  static const std::vector<MeasuredLayer> table = [] {
    std::vector<MeasuredLayer> t;
    return t;
  }();
  return table;
}

const MeasuredLayer* find_layer(const std::string& model, const std::string& gpu, const std::string& precision, int tp,
                                std::uint64_t micro_batch) {
  const MeasuredLayer* best = nullptr;
  auto distance = [&](const MeasuredLayer& m) { return m.micro_batch > micro_batch ? m.micro_batch - micro_batch : micro_batch - m.micro_batch; };
  for (const auto& m : measured_layers())
    if (m.model == model && m.gpu == gpu && m.precision == precision && m.tp == tp && (!best || distance(m) < distance(*best))) best = &m;
  return best;
}

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = build();
  return presets;
}

const ModelPreset* find_preset(const std::string& name) {
  for (const auto& p : model_presets())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace rdmalab::workloads
