// verbs_error: rank 0 (the requester) makes one mistake towards rank 1 (the responder), on
// purpose, and reports what verbs reports. Everything goes through the transport contract, so
// the same scenario shows each backend's answer: the soft RC NIC's on loopback and SimGrid, the
// kernel's on Soft-RoCE, the ConnectX's on hardware.
#include "rdmalab/workloads/verbs_errors.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "rdmalab/bootstrap.h"
#include "rdmalab/units.h"
#include "rdmalab/workloads/common.h"

namespace rdmalab::workloads {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr std::uint32_t kKeyFlip = 0x5a;  // changes a key's low byte: same index, another key, so no region
constexpr double kOverflowSettle = 0.1;   // s: long enough for every request of cq_overflow to complete

struct Wiring {
  QpEndpoint ep;
  RemoteBuffer target;
};

// What the requester saw.
struct Outcome {
  std::string operation;
  std::string completion;       // IBV_WC_..., or what happened instead of a completion
  std::string completion_text;  // ibv_wc_status_str's words
  std::string next = "-";       // what became of a request posted after it
  std::string qp_state;
  double time_us = NAN;         // post to completion
};

std::string state_name(QpState s) { return std::string("IBV_QPS_") + qp_state_name(s); }

std::string why(const std::string& what, const Scenario& sc, std::uint32_t cq_capacity) {
  if (what == "wrong_rkey")
    return "The responder found no memory region for the rkey: it answered with a NAK (remote access error) and wrote nothing. The "
           "requester's QP moved to ERR, so every request after it is flushed until the QP is reset and connected again.";
  if (what == "outside_region")
    return "The rkey is right, but the range reaches past the end of the peer's region: the responder checks the whole range against "
           "the region, refuses with a NAK (remote access error) and writes nothing; the requester's QP moved to ERR.";
  if (what == "no_remote_write")
    return "The rkey and the range are right, but the peer registered the region without IBV_ACCESS_REMOTE_WRITE: rights are per "
           "region and per operation, so the responder refuses the write (remote access error); the requester's QP moved to ERR.";
  if (what == "no_remote_read")
    return "The peer registered the region without IBV_ACCESS_REMOTE_READ: the responder refuses the read (remote access error) "
           "and sends no data; the requester's QP moved to ERR.";
  if (what == "bad_lkey")
    return "The request's own gather list names an lkey that no region of this process has: the NIC finds out when it reads the "
           "local memory, before anything goes on the wire (a local protection error on ConnectX and on the model; Linux 6.1's rxe "
           "reports a local QP operation error); the peer sees nothing, the requester's QP moved to ERR.";
  if (what == "not_rts")
    return "Only a QP in RTS (ready to send) sends: RESET, INIT, RTR (which needs the peer's address), then RTS. This QP is in INIT, "
           "so ibv_post_send refuses the request at once (EINVAL): nothing is queued, no completion comes, the QP stays in INIT.";
  if (what == "rnr")
    return fmt::format("The send needs a receive posted at the peer, and there is none: the responder answers Receiver Not Ready, the "
                       "requester waits the responder's min_rnr_timer ({} ms) and sends again; after rnr_retry ({}) retries it gives up "
                       "and its QP moves to ERR. rnr_retry 7 retries forever: a send to a peer that never posts a receive waits forever.",
                       rnr_timer_seconds(static_cast<std::uint8_t>(sc.get_int("workload.min_rnr_timer"))) * 1e3,
                       sc.get_int("workload.rnr_retry"));
  return fmt::format("{} signaled requests completed into a CQ of {} entries that nobody polled: the CQ overflowed. The completions "
                     "that did not fit are lost, the CQ reports an error from then on (verbs raises IBV_EVENT_CQ_ERR), and the QPs that "
                     "use it stop: size a CQ for every completion that can be outstanding.",
                     2 * cq_capacity, cq_capacity);
}

// Bytes of `len` at `buf` that are not zero: what a failed request must not have written.
Result<std::uint64_t> changed_bytes(MemoryProvider& mem, const Buffer& buf, MemoryRegion& mr, std::uint64_t len) {
  RDMALAB_TRY(mr.sync_from_nic(0, len));
  std::vector<std::uint8_t> host(len);
  RDMALAB_TRY(mem.read(buf, 0, host.data(), len));
  std::uint64_t n = 0;
  for (auto b : host) n += b != 0;
  return n;
}

Status run_error(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) {
  const std::string what = sc.get_string("workload.provoke");
  const std::uint64_t size = sc.get_size("workload.size");
  const double timeout = sc.get_time("workload.timeout");
  const bool requester = env.rank == 0;
  const std::uint64_t pattern = stream_seed(static_cast<std::uint64_t>(sc.get_int("seed")), 0, 0);  // what rank 0 writes
  MemoryProvider* mem = memory_for(env, memory_kind_of(sc));

  // The responder's region lacks the right the mistake needs; everything else has every right.
  std::uint32_t access = kAll;
  if (!requester && what == "no_remote_write") access &= ~kAccessRemoteWrite;
  if (!requester && what == "no_remote_read") access &= ~kAccessRemoteRead;
  RDMALAB_ASSIGN(Buffer buf, mem->allocate(size));
  RDMALAB_ASSIGN(auto pd, env.dev.alloc_pd());
  RDMALAB_ASSIGN(auto mr, pd->register_memory(buf.data(), buf.size(), access, buf.kind()));
  // The requester's source holds a pattern; what a request must not touch starts at zero: the
  // responder's region, and the requester's own buffer for a read.
  const bool source_has_data = requester && what != "no_remote_read";
  // cq_overflow's writes are good ones: the responder's region ends up holding the pattern.
  const bool target_gets_data = what == "cq_overflow";
  if (source_has_data) {
    RDMALAB_TRY(mem->fill(buf, 0, size, pattern));
  } else {
    RDMALAB_TRY(mem->clear(buf, 0, size));
  }
  RDMALAB_TRY(mr->sync_to_nic(0, size));

  RDMALAB_ASSIGN(auto cq, env.dev.create_cq(what == "cq_overflow" ? 4 : 16));
  QpCaps caps;
  caps.max_send_wr = std::max<std::uint32_t>(16, 2 * cq->capacity());
  caps.max_recv_wr = 16;
  RDMALAB_ASSIGN(auto qp, pd->create_qp(*cq, *cq, caps));
  RDMALAB_TRY(qp->to_init());
  RDMALAB_ASSIGN(auto all, allgather_value(env.boot, Wiring{qp->endpoint(), mr->remote()}));
  const Wiring& peer = all[requester ? 1 : 0];
  if (!(requester && what == "not_rts")) {
    QpConnectAttr attr;
    attr.remote = peer.ep;
    attr.rnr_retry = static_cast<std::uint8_t>(sc.get_int("workload.rnr_retry"));
    attr.min_rnr_timer_s = rnr_timer_seconds(static_cast<std::uint8_t>(sc.get_int("workload.min_rnr_timer")));
    RDMALAB_TRY(qp->to_rtr(attr));
    RDMALAB_TRY(qp->to_rts());
  }
  RDMALAB_TRY(env.boot.barrier());

  Outcome o;
  if (requester) {
    Sge sge{buf.addr(), static_cast<std::uint32_t>(size), mr->lkey()};
    SendWr wr;
    wr.wr_id = 1;
    wr.sg_list = std::span<const Sge>(&sge, 1);
    wr.opcode = SendOpcode::rdma_write;
    wr.remote_addr = peer.target.addr;
    wr.rkey = peer.target.rkey;
    if (what == "wrong_rkey") wr.rkey ^= kKeyFlip;
    if (what == "outside_region") wr.remote_addr = peer.target.addr + peer.target.length - size / 2;
    if (what == "no_remote_read") wr.opcode = SendOpcode::rdma_read;
    if (what == "bad_lkey") sge.lkey ^= kKeyFlip;
    if (what == "rnr") wr.opcode = SendOpcode::send;
    o.operation = send_opcode_name(wr.opcode);
    std::array<Completion, 1> wc{};
    if (what == "not_rts") {
      Status st = qp->post_send(std::span<const SendWr>(&wr, 1));
      o.completion = st ? "accepted (no error?)" : st.code() == Errc::invalid_state ? "refused at post: EINVAL" : "refused at post: " + st.to_string();
      o.completion_text = st ? "" : "no completion";
    } else if (what == "cq_overflow") {
      const std::uint32_t n = 2 * cq->capacity();
      for (std::uint32_t i = 0; i < n; ++i) {
        wr.wr_id = i;
        Status st = qp->post_send(std::span<const SendWr>(&wr, 1));
        if (!st) return st.with_context(fmt::format("rank 0: posting request {} of {}", i + 1, n));
      }
      RDMALAB_TRY(env.rt.compute(kOverflowSettle));  // nobody polls while they complete
      // One poll for all of them: verbs learns of an overflow (IBV_EVENT_CQ_ERR) when a poll finds
      // the CQ full, so a poll that takes one completion at a time may not see it yet.
      std::vector<Completion> taken(n);
      auto polled = cq->poll(taken);
      o.completion = polled ? fmt::format("{} completion(s), no overflow", *polled)
                            : polled.status().code() == Errc::cq_overflow ? "CQ overflow: completions lost (verbs raises IBV_EVENT_CQ_ERR)"
                                                                          : polled.status().to_string();
    } else {
      const double t0 = env.rt.now();
      RDMALAB_TRY(qp->post_send(std::span<const SendWr>(&wr, 1)));
      auto got = cq->wait(wc, timeout);
      if (!got) return got.status().with_context(fmt::format("rank 0: waiting for the {} that provokes {}", o.operation, what));
      o.time_us = (env.rt.now() - t0) * 1e6;
      o.completion = wc_status_verbs_name(wc[0].status);
      o.completion_text = wc_status_str(wc[0].status);
      // A request posted now, after the error: flushed, not executed.
      if (!env.dev.caps().flushes_posts_in_err) {
        o.next = "not tried: this kernel's rxe does not complete requests posted in ERR";
      } else {
        SendWr next = wr;
        next.wr_id = 2;
        next.opcode = SendOpcode::rdma_write;
        next.rkey = peer.target.rkey;
        next.remote_addr = peer.target.addr;
        sge.lkey = mr->lkey();
        Status st = qp->post_send(std::span<const SendWr>(&next, 1));
        if (!st) {
          o.next = "refused at post: " + st.to_string();
        } else {
          auto again = cq->wait(wc, timeout);
          if (!again) return again.status().with_context("rank 0: waiting for the request posted after the error");
          o.next = wc_status_verbs_name(wc[0].status);
        }
      }
    }
    o.qp_state = state_name(qp->state());
  }
  RDMALAB_TRY(env.boot.barrier());
  // What must be untouched: the responder's region; for a read, the requester's own buffer too.
  std::uint64_t changed = 0;
  if (!requester && target_gets_data) {
    RDMALAB_TRY(mr->sync_from_nic(0, size));
    RDMALAB_ASSIGN(changed, mem->verify(buf, 0, size, pattern));
  } else if (!source_has_data) {
    RDMALAB_ASSIGN(changed, changed_bytes(*mem, buf, *mr, size));
  }
  RDMALAB_ASSIGN(auto changes, allgather_value(env.boot, changed));
  if (!requester) return Status::ok();

  ResultRow row;
  row.workload = "verbs_error";
  row.bytes = size;
  row.ranks = env.size;
  row.iterations = 1;
  for (auto c : changes) row.errors += c;
  row.notes["provoke"] = what;
  row.notes["operation"] = o.operation;
  row.notes["completion"] = o.completion;
  row.notes["completion_text"] = o.completion_text;
  row.notes["next"] = o.next;
  row.notes["qp_state"] = o.qp_state;
  row.notes["why"] = why(what, sc, cq->capacity());
  row.notes["data_path"] = mr->data_path();
  row.notes["target"] = target_gets_data ? "wrong bytes at rank 1" : what == "no_remote_read" ? "bytes changed at either rank" : "bytes changed at rank 1";
  if (!std::isnan(o.time_us)) {
    row.extra["time_us"] = o.time_us;
    row.time_s = o.time_us * 1e-6;
  }
  rows.push_back(row);
  return Status::ok();
}

Status check_error(const Scenario& sc, const Capabilities& caps, int ranks) {
  if (ranks != 2)
    return sc.error("fabric.nodes", fmt::format("verbs_error provokes one error between two ranks, a requester and a responder: needs 2 ranks (is {})", ranks));
  const std::string what = sc.get_string("workload.provoke");
  const std::uint64_t size = sc.get_size("workload.size");
  if (caps.max_msg_size && size > caps.max_msg_size)
    return sc.error("workload.size", fmt::format("this backend moves at most {} per message", units::format_size(caps.max_msg_size)));
  if (what == "outside_region" && size < 2)
    return sc.error("workload.size", "outside_region writes half inside and half past the end of the region: needs 2 bytes or more");
  if (what == "no_remote_read" && !caps.rdma_read) return sc.error("workload.provoke", "this backend has no RDMA read");
  if (sc.is_set("workload.rnr_retry") && what != "rnr") return sc.error("workload.rnr_retry", "is read by workload.provoke: rnr only");
  if (sc.is_set("workload.min_rnr_timer") && what != "rnr") return sc.error("workload.min_rnr_timer", "is read by workload.provoke: rnr only");
  if (phantom_payload(sc)) return sc.error("workload.memory", "verbs_error checks that a failed request wrote nothing: it needs memory with bytes");
  return check_memory(sc, caps);
}

}  // namespace

void register_verbs_errors(WorkloadRegistry& reg) {
  WorkloadInfo w;
  w.name = "verbs_error";
  w.description = "one verbs error on purpose (workload.provoke): the completion status, the QP state after, and why";
  w.kind = WorkloadKind::error;
  w.check = check_error;
  w.run = run_error;
  w.min_buffer_bytes = [](const Scenario& sc) { return sc.get_size("workload.size"); };
  w.reads = {"workload.provoke", "workload.size",   "workload.rnr_retry", "workload.min_rnr_timer",
             "workload.memory",  "workload.gpu_path", "workload.timeout"};
  reg.add(std::move(w));
}

}  // namespace rdmalab::workloads
