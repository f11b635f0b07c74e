// The scenario keys core understands. docs/scenarios.md lists them; `rdmalab keys` prints them.
#include "rdmalab/scenario.h"

namespace rdmalab {

Schema core_schema() {
  Schema s;
  using T = ValueType;
  s.add("name", T::string, "unnamed", "short name of the scenario, printed with results");
  s.add("description", T::string, "", "what the scenario shows and what to look at");
  s.add_choice("backend", "loopback", "transport to run on when --backend is not given", {});  // names: full_schema()
  s.add("seed", T::integer, "1", "seed for payload patterns and any randomness; same seed, same results", 0, 9.2e18);

  // star (every node on one switch) is what every backend can run; a backend that models other
  // shapes adds their names (full_schema).
  s.add_choice("fabric.topology", "star", "shape of the cluster network", {"star"});
  s.add("fabric.nodes", T::integer, "2", "number of nodes (machines) on the fabric", 1, 1 << 20);
  s.add("fabric.gpus_per_node", T::integer, "1",
        "GPUs, and so ranks, per node: ranks = nodes × gpus_per_node, rank r on node r / gpus_per_node", 1, 64);
  s.add("fabric.link.bandwidth", T::bandwidth, "100Gbps", "bandwidth of each link, each direction", 1, 1e15);
  s.add("fabric.link.latency", T::time, "1us", "latency of each link", 0, 1);
  s.add_choice("fabric.gpu.generation", "hopper",
               "the GPUs' generation, as NCCL's tuning model tells them apart (its LL, LL128 and tree bandwidth caps, NVLink SHARP)",
               {"volta", "ampere", "hopper", "blackwell"});
  s.add_choice("fabric.gpu.model", "unnamed",
               "the GPU (docs/training.md): sets fabric.gpu.generation, caps the compute rate, and picks a training step's measured "
               "throughput; unnamed: training compute from training.gpu_flops",
               {"unnamed", "a100", "h100", "h200"});
  s.add_choice("fabric.cpu.vendor", "intel", "the CPUs' vendor: NCCL's tuning model caps LL and counts the network overhead by it",
               {"intel", "amd"});

  s.add_choice("workload.type", "write_bw", "the workload to run (rdmalab list)", {});  // names: full_schema()
  s.add("workload.size", T::size, "64KiB", "message size (collectives: up to 16GiB, as nccl-tests quotes its peaks there)", 1, 1ull << 34);
  s.add("workload.sizes", T::size_list, "", "several message sizes: a list, or a power-of-two range 2B..8MiB", 1, 1ull << 34);
  s.add("workload.iterations", T::integer, "1000", "messages per QP per size (perftest -n); collectives: iterations per size, default 20 (nccl-tests -n)", 1, 1e9);
  s.add("workload.warmup", T::integer, "0", "untimed iterations before the timed ones (collectives: default 5, nccl-tests -w)", 0, 1e9);
  s.add("workload.duration", T::time, "", "run each size for this long instead of a fixed count (perftest -D)", 1e-6, 86400);
  s.add("workload.qps", T::integer, "1", "queue pairs per rank pair (perftest -q)", 1, 16);
  s.add("workload.tx_depth", T::integer, "128", "outstanding send requests per QP (perftest -t)", 1, 16384);
  s.add("workload.rx_depth", T::integer, "512", "posted receives per QP for send workloads (perftest -r)", 1, 16384);
  s.add("workload.inline", T::size, "0B", "send payloads up to this size inline (perftest -I)", 0, 4096);
  s.add("workload.cq_mod", T::integer, "100", "signal one send completion every N requests (perftest -Q); at most tx_depth", 1,
        16384);
  s.add("workload.post_list", T::integer, "1", "requests handed to each post_send call (perftest -l)", 1, 1024);
  s.add("workload.bidirectional", T::boolean, "false", "both sides send at once (perftest -b)");
  s.add_choice("workload.atomic", "fetch_add", "atomic operation for atomic_* workloads (perftest -A)", {"fetch_add", "cmp_swap"});
  s.add("workload.verify", T::boolean, "true", "check every payload byte that arrives");
  s.add_choice(
      "workload.memory", "host",
      "where buffers live: host, cuda (GPU), or phantom (host memory without bytes: the same as host with workload.payload: "
      "phantom)",
      {"host", "cuda", "phantom"});
  s.add_choice("workload.payload", "real",
               "real: buffers hold their bytes and every byte is checked; phantom: sizes and addresses without bytes (the model only), "
               "so a run of thousands of GPUs needs no memory for payloads; the data path stays that of workload.memory",
               {"real", "phantom"});
  s.add_choice("workload.gpu_path", "auto",
               "how a NIC reaches GPU memory: dmabuf, peermem (both GPUDirect RDMA), staged (host bounce buffers); auto tries them in that "
               "order",
               {"auto", "dmabuf", "peermem", "staged"});
  // verbs_error: one verbs error, provoked on purpose (docs/labs/).
  s.add_choice("workload.provoke", "wrong_rkey",
               "verbs_error: the error to provoke: an RDMA write with a wrong rkey, outside the peer's region, to a region without remote "
               "write; a read from one without remote read; a bad lkey; a post on a QP not in RTS; a send with no receive posted (RNR); a "
               "CQ too small",
               {"wrong_rkey", "outside_region", "no_remote_write", "no_remote_read", "bad_lkey", "not_rts", "rnr", "cq_overflow"});
  s.add("workload.rnr_retry", T::integer, "3", "verbs_error rnr: receiver-not-ready retries before the error (verbs' rnr_retry; 7, forever, is refused)", 0, 6);
  s.add("workload.min_rnr_timer", T::integer, "12",
        "verbs_error rnr: the responder's RNR timer as verbs encodes it (IBA table 45: 1 = 0.01 ms ... 12 = 0.64 ms, perftest's ... 31 = "
        "491.52 ms)", 1, 31);
  // Collectives (nccl-tests conventions).
  s.add_choice("workload.dtype", "fp32", "element type of collectives", {"fp32", "fp16", "bf16", "int32", "int8"});
  s.add_choice("workload.op", "sum", "reduction operator of all_reduce, reduce_scatter and reduce", {"sum", "prod", "max", "min"});
  s.add("workload.root", T::integer, "0", "root rank of broadcast and reduce", 0, 1 << 20);
  s.add_choice("workload.algorithm", "auto", "collective algorithm; auto: NCCL's tuning model picks per size (docs/collectives.md)",
               {"auto", "ring", "tree", "rhd", "chain", "binomial", "pairwise", "nvls", "nvls_tree", "collnet"});
  s.add_choice("workload.protocol", "auto",
               "NCCL's protocol for collectives: ll, ll128, simple; auto: NCCL's tuning model picks per size. Its costs are modelled on "
               "simgrid; elsewhere the chunks move as they are (simple)",
               {"auto", "simple", "ll", "ll128"});
  s.add("workload.chunk", T::size, "512KiB",
        "bytes per pipelined chunk of a collective (NCCL's step); unset: the protocol's (simple 512KiB, ll128 562.5KiB, ll 32KiB)", 1,
        1u << 30);
  s.add("workload.channels", T::string, "auto",
        "NCCL's channels: rings a ring collective is split over, each with its own order and connections; auto: one per NIC of a "
        "node when the ranks span several nodes, else 1 (docs/collectives.md); or a count 1..64");
  s.add("workload.slots", T::integer, "8", "staging slots per connection of a collective (chunks in flight)", 1, 1024);
  s.add_choice("workload.placement", "both", "collectives: run out-of-place, in-place, or both (nccl-tests prints both)",
               {"both", "out_of_place", "in_place"});
  // Training steps (docs/training.md).
  s.add_choice("training.model", "resnet50", "model preset, or custom with training.layers", {"resnet50", "gpt3-175b", "llama2-70b", "custom"});
  s.add("training.layers", T::int_list, "", "custom model: parameters per layer, in forward order", 1, 1e13);
  s.add("training.layer_flops", T::int_list, "", "custom model: forward FLOPs per sample per layer (default 2 x parameters)", 0, 1e18);
  s.add("training.batch", T::integer, "", "samples (images or tokens) per GPU per step; default per preset", 1, 1e12);
  s.add_choice("training.precision", "amp",
               "amp: mixed precision (FP16/BF16 tensor cores, FP32 master weights and gradients); tf32: TF32 tensor cores; fp8: the linear "
               "layers' products in FP8 (Transformer Engine; Hopper). Picks the measured throughput or layer and the peak that caps the "
               "compute rate",
               {"amp", "tf32", "fp8"});
  s.add("training.gpu_flops", T::number, "400e12",
        "achieved FLOP/s of one GPU, overriding the measured throughput of the model on fabric.gpu.model (400 TFLOP/s when "
        "neither is given: about 40% of an H100's dense BF16 peak)",
        1e6, 1e18);
  s.add("training.stragglers", T::int_list, "", "what-if: ranks whose compute is slower by training.straggler_factor", 0, 1e9);
  s.add("training.straggler_factor", T::number, "", "what-if: how much longer the stragglers' compute takes (1.2: 20 % slower)", 1, 1000);
  s.add("training.layer_time", T::time, "", "forward time of every layer for the whole batch, instead of FLOPs / gpu_flops", 0, 3600);
  s.add("training.bucket", T::size, "25MiB", "gradient bucket size (PyTorch DDP's bucket_cap_mb)", 1, 1ull << 40);
  s.add("training.first_bucket", T::size, "1MiB",
        "train_dp: the first gradient bucket's size (the last layers' gradients; PyTorch DDP's _DEFAULT_FIRST_BUCKET_BYTES)", 1, 1ull << 40);
  s.add_choice("training.sharding", "full",
               "train_fsdp: full: parameters sharded again after the forward pass and gathered again for the backward (FSDP FULL_SHARD, "
               "ZeRO-3); grad_op: kept from the forward to the backward (SHARD_GRAD_OP, ZeRO-2)",
               {"full", "grad_op"});
  s.add("training.tensor_parallel", T::integer, "1", "train_dp, train_3d: tensor-parallel group size (consecutive ranks, as inside a node)", 1, 1024);
  s.add("training.pipeline_parallel", T::integer, "2", "train_3d: pipeline stages (the ranks divide into tensor x pipeline x data parallel)", 1, 1024);
  s.add("training.tp_overlap", T::boolean, "false",
        "train_3d: overlap the tensor-parallel all-gathers and reduce-scatters with the linear layers beside them (NeMo's tp_comm_overlap, "
        "Transformer Engine's userbuffers)");
  s.add("training.virtual_stages", T::integer, "1",
        "train_3d: model chunks per pipeline stage (Megatron-LM's virtual pipeline size; more than 1: the interleaved schedule)", 1, 1024);
  s.add("training.moe_alltoall", T::size, "0B", "train_dp: bytes each rank exchanges in each MoE all-to-all (2 per layer and pass); 0 = dense model", 0,
        1ull << 40);
  s.add("training.microbatches", T::integer, "8", "train_pp, train_3d: micro-batches per step (per pipeline)", 1, 1e6);
  s.add("training.activation", T::size, "", "bytes across a stage boundary per micro-batch (train_pp) or all-reduced per layer (tensor parallel); default from the preset", 1, 1ull << 40);
  s.add("training.progress_interval", T::time, "20us", "compute slice between two engine progress calls while collectives are in flight", 1e-7, 1);
  s.add("workload.timeout", T::time, "30s", "longest wait for one completion before the run fails", 1e-6, 86400);
  s.add_alternatives("workload.size", "workload.sizes");
  s.add_alternatives("workload.iterations", "workload.duration");
  return s;
}

}  // namespace rdmalab
