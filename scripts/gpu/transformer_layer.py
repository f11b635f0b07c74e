#!/usr/bin/env python3
"""Measures one transformer layer's forward and backward on this GPU, as one tensor-parallel rank
runs it: the compute a training step of gpt3-175b or llama2-70b spends per layer and micro-batch,
with no communication in it (rdmalab adds the communication). docs/training.md, "Measured layers".

Runs where PyTorch sees a CUDA GPU (the lent H100/H200):
    python3 scripts/gpu/transformer_layer.py --out results.json

The layer is Megatron-LM's, split over `tp` ranks as Megatron splits it: the query/key/value and
MLP-up weights by columns, the output and MLP-down weights by rows, 1/tp of the heads on each
rank. Attention is PyTorch's scaled_dot_product_attention, causal (the fused flash kernel, as
Megatron, NeMo and torchtitan use). Precision:
  bf16: every matrix product in bf16 (fp32 accumulation);
  fp8:  the four linear layers' products in fp8 through torch._scaled_mm (activations and weights
        e4m3, gradients e5m2, one scale per tensor from its current absolute maximum: Transformer
        Engine's current scaling, "FP8-CS"), the casts and transposes they need included;
        attention, norms and activations stay bf16, as in Transformer Engine. The casts are
        compiled (torch.compile) into fused kernels.
Each configuration is checked before it is timed: the fp8 layer's output and input gradient
against the bf16 layer's on the same weights (relative error), and every output finite.
Timing (time_ms): the GPU's kernel time per pass from PyTorch's profiler, and for reference the
median CUDA-event time of this eager loop, over --reps passes after --warm warm-ups; inputs
rotate among 4 sets so that no pass reads another's cached activations.
"""
import argparse, json, math, statistics, sys

import torch
import torch.nn.functional as F

MODELS = {
    # Brown et al. 2020, Table 2.1: d 12288, 96 heads, MLP 4d (GeLU), LayerNorm, context 2048.
    "gpt3-175b": dict(d=12288, heads=96, kv_heads=96, ffn=49152, gated=False, norm="layer", seq=2048, vocab=50257),
    # Llama 2 70B's released config: d 8192, 64 heads, 8 KV heads, SwiGLU 28672, RMSNorm, context 4096.
    "llama2-70b": dict(d=8192, heads=64, kv_heads=8, ffn=28672, gated=True, norm="rms", seq=4096, vocab=32000),
}


def _quantize(t, fp8):
    """Per-tensor current scaling: the tensor's absolute maximum maps to the format's largest value.
    Returns the fp8 tensor, its transpose laid out row-major (the backward's operands need both, as
    Transformer Engine's fused cast-transpose makes them) and the inverse scale."""
    fmax = torch.finfo(fp8).max
    amax = t.abs().amax().float().clamp(min=1e-12)
    scale = fmax / amax
    t8 = (t.float() * scale).to(fp8)
    return t8, t8.t().contiguous(), (1.0 / scale)


# Compiled (Triton kernels from Inductor) so that the scale, cast and transpose run as fused kernels,
# as Transformer Engine's do; run eagerly they cost more than the fp8 products save.
# Each configuration's shapes compile once; the default recompile limit (8) would send later ones eager.
for _knob in ("recompile_limit", "cache_size_limit"):
    if hasattr(torch._dynamo.config, _knob):
        setattr(torch._dynamo.config, _knob, 1024)
quantize = torch.compile(_quantize, dynamic=False)


class Fp8Linear(torch.autograd.Function):
    """y = x @ w.T with the three products (forward, input gradient, weight gradient) in fp8."""

    @staticmethod
    def forward(ctx, x, w):
        e4 = torch.float8_e4m3fn
        x8, x8_t, sx_inv = quantize(x, e4)
        w8, w8_t, sw_inv = quantize(w, e4)
        # _scaled_mm: first operand row-major, second column-major; w8.t() is w's transpose as a view.
        y = torch._scaled_mm(x8, w8.t(), scale_a=sx_inv, scale_b=sw_inv, out_dtype=torch.bfloat16)
        ctx.save_for_backward(x8_t, w8_t, sx_inv, sw_inv)
        return y

    @staticmethod
    def backward(ctx, gy):
        x8_t, w8_t, sx_inv, sw_inv = ctx.saved_tensors
        g8, g8_t, sg_inv = quantize(gy.contiguous(), torch.float8_e5m2)
        # Input gradient: gy [n, out] @ w [out, in]; w column-major is w8_t [in, out] transposed.
        gx = torch._scaled_mm(g8, w8_t.t(), scale_a=sg_inv, scale_b=sw_inv, out_dtype=torch.bfloat16)
        # Weight gradient: gy.T [out, n] @ x [n, in]; x column-major is x8_t [in, n] transposed.
        gw = torch._scaled_mm(g8_t, x8_t.t(), scale_a=sg_inv, scale_b=sx_inv, out_dtype=torch.bfloat16)
        return gx, gw


def linear(x, w, fp8):
    return Fp8Linear.apply(x, w) if fp8 else x @ w.t()


def make_layer(m, tp, device, gen):
    d, hd = m["d"], m["d"] // m["heads"]
    h, kvh = m["heads"] // tp, max(1, m["kv_heads"] // tp)
    ffn = m["ffn"] // tp
    def w(rows, cols):
        return (torch.randn(rows, cols, device=device, generator=gen, dtype=torch.float32) / math.sqrt(cols)).to(torch.bfloat16).requires_grad_()
    p = dict(
        qkv=w((h + 2 * kvh) * hd, d),
        o=w(d, h * hd),
        up=w((2 if m["gated"] else 1) * ffn, d),
        down=w(d, ffn),
        n1=torch.ones(d, device=device, dtype=torch.bfloat16, requires_grad=True),
        n2=torch.ones(d, device=device, dtype=torch.bfloat16, requires_grad=True),
    )
    return p, (h, kvh, hd, ffn)


def norm(x, wt, kind):
    if kind == "layer":
        return F.layer_norm(x, (x.shape[-1],), wt)
    return F.rms_norm(x, (x.shape[-1],), wt)


def layer_forward(x, p, shape, m, b, s, fp8):
    h, kvh, hd, ffn = shape
    y = norm(x, p["n1"], m["norm"])
    qkv = linear(y, p["qkv"], fp8)
    q, k, v = qkv.split([h * hd, kvh * hd, kvh * hd], dim=-1)
    q = q.view(b, s, h, hd).transpose(1, 2)
    k = k.view(b, s, kvh, hd).transpose(1, 2)
    v = v.view(b, s, kvh, hd).transpose(1, 2)
    if kvh != h:  # grouped-query attention: each key/value head serves h/kvh query heads
        k = k.repeat_interleave(h // kvh, dim=1)
        v = v.repeat_interleave(h // kvh, dim=1)
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    a = a.transpose(1, 2).reshape(b * s, h * hd)
    x = x + linear(a, p["o"], fp8)  # Megatron all-reduces this output across the tp group (rdmalab's part)
    y = norm(x, p["n2"], m["norm"])
    u = linear(y, p["up"], fp8)
    if m["gated"]:
        g, u = u.chunk(2, dim=-1)
        u = F.silu(g) * u
    else:
        u = F.gelu(u, approximate="tanh")
    return x + linear(u, p["down"], fp8)  # and this one


def head_forward(x, w, labels, fp8):
    """The output layer of the last pipeline stage: logits over 1/tp of the vocabulary, cross-entropy."""
    logits = linear(x, w, fp8)
    return F.cross_entropy(logits.float(), labels)


def layer_flops(m, tp, b, s):
    """Model FLOPs of one layer's forward on one rank (Megatron's count: 2 per multiply-add; causal
    attention counted in full, as Megatron-LM and NeMo count model FLOP/s)."""
    d, hd = m["d"], m["d"] // m["heads"]
    h, kvh, ffn = m["heads"] // tp, max(1, m["kv_heads"] // tp), m["ffn"] // tp
    t = b * s
    mm = 2 * t * d * ((h + 2 * kvh) * hd + h * hd + (3 if m["gated"] else 2) * ffn)
    attn = 2 * 2 * b * h * s * s * hd
    return mm + attn


def time_ms(fn, reps, warm):
    """Returns (median of `reps` timed calls by CUDA events, the GPU's kernel time per call).
    The first is what this script's eager Python achieves; at a few milliseconds a layer it includes
    gaps where the GPU waits for the host to launch the next of some fifty kernels. The second, the
    sum of the kernels' own durations from PyTorch's profiler (one stream, so none overlap), is the
    layer's cost on the GPU when the host keeps ahead of it, as Transformer Engine's fused C++ path
    and CUDA graphs in NeMo and Megatron-LM make it; rdmalab takes that one."""
    for _ in range(warm):
        fn(0)
    torch.cuda.synchronize()
    out = []
    for i in range(reps):
        a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(i)
        z.record()
        z.synchronize()
        out.append(a.elapsed_time(z))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(reps):
            fn(i)
        torch.cuda.synchronize()
    kernel_us = sum(e.self_device_time_total for e in prof.key_averages())
    return statistics.median(out), kernel_us / 1000 / reps


def rel_err(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm().clamp(min=1e-30)).item()


def measure(model, tp, b, precision, reps, warm, gen):
    m = MODELS[model]
    s, d = m["seq"], m["d"]
    dev = "cuda"
    p, shape = make_layer(m, tp, dev, gen)
    fp8 = precision == "fp8"
    xs = [torch.randn(b * s, d, device=dev, generator=gen).to(torch.bfloat16).requires_grad_() for _ in range(4)]
    gy = [torch.randn(b * s, d, device=dev, generator=gen).to(torch.bfloat16) for _ in range(4)]
    # Check: finite, and fp8 close to bf16 on the same inputs.
    y = layer_forward(xs[0], p, shape, m, b, s, fp8)
    y.backward(gy[0])
    gx = xs[0].grad.clone()
    check = {"finite": bool(torch.isfinite(y).all().item() and torch.isfinite(gx).all().item())}
    if fp8:
        xs[0].grad = None
        y16 = layer_forward(xs[0], p, shape, m, b, s, False)
        y16.backward(gy[0])
        check["rel_err_out_vs_bf16"] = rel_err(y, y16)
        check["rel_err_grad_vs_bf16"] = rel_err(gx, xs[0].grad)
    for t in xs:
        t.grad = None
    for v in p.values():
        v.grad = None
    with torch.no_grad():
        fwd = time_ms(lambda i: layer_forward(xs[i % 4], p, shape, m, b, s, fp8), reps, warm)
    def fb(i):
        # Every gradient (input and weights) returned, none accumulated into .grad between passes.
        x = xs[i % 4]
        torch.autograd.grad(layer_forward(x, p, shape, m, b, s, fp8), [x, *p.values()], gy[i % 4])
    both = time_ms(fb, reps, warm)
    # The forward inside fwd+bwd also keeps its activations for the backward (autograd): time it so.
    fwd_train = time_ms(lambda i: layer_forward(xs[i % 4], p, shape, m, b, s, fp8), reps, warm)
    # The output layer (last stage), vocabulary split over tp, padded to a multiple of 128 as Megatron pads it.
    vocab = (m["vocab"] + 128 * tp - 1) // (128 * tp) * 128
    wh = (torch.randn(vocab, d, device=dev, generator=gen) / math.sqrt(d)).to(torch.bfloat16).requires_grad_()
    labels = torch.randint(0, vocab, (b * s,), device=dev, generator=gen)
    def head_fb(i):
        x = xs[i % 4]
        torch.autograd.grad(head_forward(x, wh, labels, fp8), [x, wh])
    with torch.no_grad():
        head_fwd = time_ms(lambda i: head_forward(xs[i % 4], wh, labels, fp8), reps, warm)
    head_both = time_ms(head_fb, reps, warm)
    flops = layer_flops(m, tp, b, s)
    # Kernel times (index 1) are the figures rdmalab uses; the event times (index 0) are kept to show
    # how much of this script's eager loop is the host's.
    return dict(model=model, tp=tp, micro_batch=b, seq=s, precision=precision,
                fwd_ms=fwd_train[1], bwd_ms=both[1] - fwd_train[1],
                head_fwd_ms=head_fwd[1], head_bwd_ms=head_both[1] - head_fwd[1],
                fwd_event_ms=fwd_train[0], fwd_bwd_event_ms=both[0], fwd_nograd_ms=fwd[1],
                fwd_tflops=flops / fwd_train[1] / 1e9, fwd_bwd_tflops=3 * flops / both[1] / 1e9, check=check)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gpt3-175b,llama2-70b")
    ap.add_argument("--tp", default="4,8")
    ap.add_argument("--micro-batch", default="1,2")
    ap.add_argument("--precision", default="bf16,fp8")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--out", default="transformer_layer.json")
    a = ap.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(1)
    props = torch.cuda.get_device_properties(0)
    rows = []
    for model in a.models.split(","):
        for tp in map(int, a.tp.split(",")):
            for b in map(int, a.micro_batch.split(",")):
                for prec in a.precision.split(","):
                    r = measure(model, tp, b, prec, a.reps, a.warm, gen)
                    r["gpu"] = props.name
                    rows.append(r)
                    ok = r["check"]["finite"] and (prec != "fp8" or (r["check"]["rel_err_out_vs_bf16"] < 0.1 and r["check"]["rel_err_grad_vs_bf16"] < 0.2))
                    r["check"]["ok"] = ok
                    print(f"{model:11} tp {tp} mb {b} {prec:4}  fwd {r['fwd_ms']:8.3f} ms  bwd {r['bwd_ms']:8.3f} ms  "
                          f"({r['fwd_bwd_tflops']:6.1f} TFLOP/s; events fwd {r['fwd_event_ms']:7.3f} fwd+bwd {r['fwd_bwd_event_ms']:7.3f})  head fwd {r['head_fwd_ms']:6.3f} bwd {r['head_bwd_ms']:6.3f}  "
                          f"check {'ok' if ok else 'FAILED'} {json.dumps(r['check'])}", flush=True)
                    torch.cuda.empty_cache()
                    # Written after every row, so that a run stopped part way keeps what it measured.
                    json.dump(dict(gpu=props.name, torch=torch.__version__, cuda=torch.version.cuda, rows=rows),
                              open(a.out, "w"), indent=1)
    sys.exit(0 if all(r["check"]["ok"] for r in rows) else 1)


if __name__ == "__main__":
    main()
