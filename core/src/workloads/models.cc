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
  l.linear = {d * d + 2 * d * kv_dim, d * d, static_cast<std::uint64_t>(mlp_matrices - 1) * d * ffn, d * ffn};
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
    // The output projection is the embedding matrix again (tied): no parameters of its own, but
    // its logits product is computed (2 * vocabulary * d per token, as Megatron-LM counts it).
    p.layers.push_back({"lm_head", 0, 2.0 * 50257 * d});
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
    // One run, raw figures in scripts/gpu/measured/h100-sxm-2026-12-07.json. Each figure is the
    // GPU's kernel time per pass (PyTorch profiler, ten passes after three warm-ups); bf16 is
    // training.precision amp. fp8 casts are Inductor-fused, not Transformer Engine's kernels.
    const std::string h100 =
        "rdmalab scripts/gpu/transformer_layer.py, NVIDIA H100 80GB HBM3 (SXM), PyTorch 2.11.0+cu130, CUDA 13.0, 2026-12-07";
    return std::vector<MeasuredLayer>{
        {"llama2-70b", "h100", "amp", 4, 1, 2.954e-3, 6.346e-3, 0.933e-3, 1.606e-3, h100},
        {"llama2-70b", "h100", "fp8", 4, 1, 2.593e-3, 4.050e-3, 0.858e-3, 1.063e-3, h100},
        {"llama2-70b", "h100", "amp", 4, 2, 6.063e-3, 12.438e-3, 1.867e-3, 3.437e-3, h100},
        {"llama2-70b", "h100", "fp8", 4, 2, 4.773e-3, 8.276e-3, 1.562e-3, 2.115e-3, h100},
        {"llama2-70b", "h100", "amp", 8, 1, 1.586e-3, 3.302e-3, 0.470e-3, 0.821e-3, h100},
        {"llama2-70b", "h100", "fp8", 8, 1, 1.561e-3, 2.416e-3, 0.481e-3, 0.557e-3, h100},
        {"llama2-70b", "h100", "amp", 8, 2, 3.220e-3, 6.734e-3, 0.934e-3, 1.671e-3, h100},
        {"llama2-70b", "h100", "fp8", 8, 2, 2.806e-3, 4.673e-3, 0.854e-3, 1.107e-3, h100},
        {"llama2-70b", "h100", "amp", 2, 1, 5.823e-3, 12.115e-3, 1.829e-3, 3.496e-3, h100},
        {"llama2-70b", "h100", "fp8", 2, 1, 4.671e-3, 7.842e-3, 1.652e-3, 2.165e-3, h100},
        {"llama2-70b", "h100", "amp", 2, 2, 11.646e-3, 25.185e-3, 3.727e-3, 6.851e-3, h100},
        {"llama2-70b", "h100", "fp8", 2, 2, 8.565e-3, 15.623e-3, 2.894e-3, 4.431e-3, h100},
        {"llama2-70b", "h100", "amp", 1, 1, 11.666e-3, 26.295e-3, 3.844e-3, 6.754e-3, h100},
        {"llama2-70b", "h100", "fp8", 1, 1, 9.029e-3, 15.293e-3, 3.223e-3, 4.482e-3, h100},
        {"llama2-70b", "h100", "amp", 1, 2, 22.958e-3, 48.650e-3, 8.285e-3, 13.440e-3, h100},
        {"llama2-70b", "h100", "fp8", 1, 2, 16.838e-3, 31.121e-3, 5.877e-3, 8.887e-3, h100},
        {"gpt3-175b", "h100", "amp", 4, 1, 2.777e-3, 6.131e-3, 0.981e-3, 1.960e-3, h100},
        {"gpt3-175b", "h100", "fp8", 4, 1, 2.860e-3, 3.757e-3, 1.051e-3, 1.176e-3, h100},
        {"gpt3-175b", "h100", "amp", 4, 2, 5.919e-3, 11.697e-3, 1.972e-3, 4.228e-3, h100},
        {"gpt3-175b", "h100", "fp8", 4, 2, 4.598e-3, 7.197e-3, 1.723e-3, 2.276e-3, h100},
        {"gpt3-175b", "h100", "amp", 8, 1, 1.437e-3, 3.242e-3, 0.535e-3, 0.922e-3, h100},
        {"gpt3-175b", "h100", "fp8", 8, 1, 1.611e-3, 2.078e-3, 0.565e-3, 0.591e-3, h100},
        {"gpt3-175b", "h100", "amp", 8, 2, 2.985e-3, 6.478e-3, 0.993e-3, 1.829e-3, h100},
        {"gpt3-175b", "h100", "fp8", 8, 2, 2.652e-3, 4.139e-3, 0.919e-3, 1.135e-3, h100},
        {"gpt3-175b", "h100", "amp", 2, 1, 5.603e-3, 11.548e-3, 2.066e-3, 4.029e-3, h100},
        {"gpt3-175b", "h100", "fp8", 2, 1, 5.310e-3, 7.051e-3, 2.013e-3, 2.375e-3, h100},
        {"gpt3-175b", "h100", "amp", 2, 2, 10.943e-3, 26.414e-3, 4.122e-3, 8.286e-3, h100},
        {"gpt3-175b", "h100", "fp8", 2, 2, 8.513e-3, 13.794e-3, 3.316e-3, 4.603e-3, h100},
        {"gpt3-175b", "h100", "amp", 1, 1, 10.895e-3, 25.783e-3, 4.177e-3, 7.609e-3, h100},
        {"gpt3-175b", "h100", "fp8", 1, 1, 10.221e-3, 13.891e-3, 4.067e-3, 4.808e-3, h100},
        {"gpt3-175b", "h100", "amp", 1, 2, 21.661e-3, 48.487e-3, 9.073e-3, 15.254e-3, h100},
        {"gpt3-175b", "h100", "fp8", 1, 2, 16.563e-3, 29.160e-3, 6.799e-3, 9.461e-3, h100},
    };
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
