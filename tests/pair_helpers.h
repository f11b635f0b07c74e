// Helpers for tests that drive the transport contract by hand between two ranks, one RC QP each.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "rdmalab/backend.h"
#include "rdmalab/bootstrap.h"

namespace rdmalab::test {

// A launch of `ranks` ranks whose expectation failures count here: backends may run ranks in a
// child process (simgrid), where failures are printed by the child and carried back through
// export_state.
inline LaunchSpec spec_for(int ranks) {
  LaunchSpec spec;
  spec.ranks = ranks;
  spec.export_state = [] { return std::string(::testing::Test::HasFailure() ? "failed" : "ok"); };
  spec.import_state = [](const std::string& s) {
    if (s == "failed") ADD_FAILURE() << "expectations failed in the ranks' process (see its output above)";
  };
  return spec;
}

struct PeerRegion {
  QpEndpoint ep;
  RemoteBuffer region;
};

// Exchanges endpoints and regions with the other of two ranks, brings the QP to RTS and waits
// for the peer to be there too. Returns the peer's region.
inline Result<RemoteBuffer> connect_to_other_rank(RankEnv& env, QueuePair& qp, const MemoryRegion& mr) {
  RDMALAB_ASSIGN(auto all, allgather_value(env.boot, PeerRegion{qp.endpoint(), mr.remote()}));
  const PeerRegion peer = all[static_cast<std::size_t>(1 - env.rank)];
  RDMALAB_TRY(qp.to_init());
  QpConnectAttr attr;
  attr.remote = peer.ep;
  RDMALAB_TRY(qp.to_rtr(attr));
  RDMALAB_TRY(qp.to_rts());
  RDMALAB_TRY(env.boot.barrier());
  return peer.region;
}

// Posts one signaled request with one SGE against `remote` and waits (10 s) for its completion.
inline Result<Completion> post_and_wait(QueuePair& qp, CompletionQueue& cq, SendOpcode op, const Sge& sge, const RemoteBuffer& remote,
                                        std::uint64_t wr_id = 1) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.sg_list = std::span<const Sge>(&sge, 1);
  wr.remote_addr = remote.addr;
  wr.rkey = remote.rkey;
  RDMALAB_TRY(qp.post_send(std::span<const SendWr>(&wr, 1)));
  std::array<Completion, 1> wc{};
  RDMALAB_TRY(cq.wait(wc, 10.0).status());
  return wc[0];
}

}  // namespace rdmalab::test
