// The conformance suite: every point of the transport contract (docs/transport-contract.md),
// written once and run on every backend that is usable on this machine. A capability a backend
// does not advertise is a skip with the reason, never a pass.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <functional>

#include "../listing.h"
#include "../pair_helpers.h"
#include "backends.h"
#include "rdmalab/backend.h"

namespace rdmalab {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr double kWait = 10.0;  // seconds (simulated on simgrid)

struct PairOpts {
  std::uint32_t access = kAll;  // access of every rank's region
  std::uint32_t cq_entries = 256;
  QpCaps caps{};
  std::uint8_t rnr_retry = 7;
  double rnr_timer = 12e-6;
  bool connect = true;
  std::size_t bytes = 1 << 16;
};

struct Side {
  RankEnv* env = nullptr;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<QueuePair> qp;
  Buffer buf;
  std::unique_ptr<MemoryRegion> mr;
  RemoteBuffer peer;     // the other rank's region
  QpEndpoint peer_ep;
  int rank() const { return env->rank; }
  std::uint8_t* bytes() const { return reinterpret_cast<std::uint8_t*>(buf.data()); }
};

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto b = all_backends().make(GetParam());
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    backend_ = std::move(b).value();
    caps_ = backend_->capabilities();
  }

  // Runs `body` on two ranks, each with a PD, a CQ, an RC QP connected to the other rank and a
  // registered buffer of opts.bytes. Failures inside `body` are gtest failures.
  void with_pair(const PairOpts& opts, const std::function<void(Side&)>& body) {
    Status st = backend_->launch(test::spec_for(2), [&](RankEnv& env) -> Status {
      Side s;
      s.env = &env;
      RDMALAB_ASSIGN(s.pd, env.dev.alloc_pd());
      RDMALAB_ASSIGN(s.cq, env.dev.create_cq(opts.cq_entries));
      RDMALAB_ASSIGN(s.qp, s.pd->create_qp(*s.cq, *s.cq, opts.caps));
      RDMALAB_ASSIGN(s.buf, env.mem.allocate(opts.bytes));
      RDMALAB_ASSIGN(s.mr, s.pd->register_memory(s.buf.data(), opts.bytes, opts.access));
      test::PeerRegion mine{s.qp->endpoint(), s.mr->remote()};
      RDMALAB_ASSIGN(auto all, allgather_value(env.boot, mine));
      s.peer = all[static_cast<std::size_t>(1 - env.rank)].region;
      s.peer_ep = all[static_cast<std::size_t>(1 - env.rank)].ep;
      if (opts.connect) {
        RDMALAB_TRY(s.qp->to_init());
        QpConnectAttr attr;
        attr.remote = s.peer_ep;
        attr.rnr_retry = opts.rnr_retry;
        attr.min_rnr_timer_s = opts.rnr_timer;
        RDMALAB_TRY(s.qp->to_rtr(attr));
        RDMALAB_TRY(s.qp->to_rts());
      }
      RDMALAB_TRY(env.boot.barrier());
      body(s);
      return env.boot.barrier();
    });
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }

  static Completion wait_one(Side& s) {
    std::array<Completion, 1> wc{};
    auto n = s.cq->wait(wc, kWait);
    EXPECT_TRUE(n.is_ok()) << "rank " << s.rank() << ": " << n.status().to_string();
    if (!n.is_ok()) return Completion{~0ull, WcOpcode::send, WcStatus::general_err};
    EXPECT_EQ(*n, 1u);
    return wc[0];
  }

  static Status post(Side& s, SendWr wr, std::span<const Sge> sges) {
    wr.sg_list = sges;
    return s.qp->post_send(std::span<const SendWr>(&wr, 1));
  }

  static Sge sge(const Side& s, std::size_t off, std::uint32_t len) { return Sge{s.mr->addr() + off, len, s.mr->lkey()}; }

  static void post_recv(Side& s, std::uint64_t wr_id, std::size_t off, std::uint32_t len) {
    Sge g = sge(s, off, len);
    RecvWr r{wr_id, std::span<const Sge>(&g, 1)};
    Status st = s.qp->post_recv(std::span<const RecvWr>(&r, 1));
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }

  std::unique_ptr<Backend> backend_;
  Capabilities caps_;
};

// ------------------------------------------------------------------------------------------
// Queue pair state machine

TEST_P(Conformance, QpStartsInResetAndWalksTheVerbsStateMachine) {
  PairOpts o;
  o.connect = false;
  with_pair(o, [](Side& s) {
    EXPECT_EQ(s.qp->state(), QpState::reset);
    // Out of order transitions are refused.
    EXPECT_EQ(s.qp->to_rts().code(), Errc::invalid_state);
    QpConnectAttr attr;
    attr.remote = s.peer_ep;
    EXPECT_EQ(s.qp->to_rtr(attr).code(), Errc::invalid_state);
    ASSERT_TRUE(s.qp->to_init().is_ok());
    EXPECT_EQ(s.qp->state(), QpState::init);
    EXPECT_EQ(s.qp->to_init().code(), Errc::invalid_state);
    ASSERT_TRUE(s.qp->to_rtr(attr).is_ok());
    EXPECT_EQ(s.qp->state(), QpState::rtr);
    ASSERT_TRUE(s.qp->to_rts().is_ok());
    EXPECT_EQ(s.qp->state(), QpState::rts);
    ASSERT_TRUE(s.qp->to_error().is_ok());
    EXPECT_EQ(s.qp->state(), QpState::err);
    ASSERT_TRUE(s.qp->reset().is_ok());
    EXPECT_EQ(s.qp->state(), QpState::reset);
  });
}

TEST_P(Conformance, PostSendIsRefusedUnlessTheQpIsInRts) {
  PairOpts o;
  o.connect = false;
  with_pair(o, [](Side& s) {
    Sge g = sge(s, 0, 8);
    SendWr wr;
    wr.opcode = SendOpcode::rdma_write;
    wr.remote_addr = s.peer.addr;
    wr.rkey = s.peer.rkey;
    EXPECT_EQ(post(s, wr, {&g, 1}).code(), Errc::invalid_state) << "in RESET";
    RecvWr r{1, {&g, 1}};
    EXPECT_EQ(s.qp->post_recv(std::span<const RecvWr>(&r, 1)).code(), Errc::invalid_state) << "post_recv in RESET";
    ASSERT_TRUE(s.qp->to_init().is_ok());
    EXPECT_EQ(post(s, wr, {&g, 1}).code(), Errc::invalid_state) << "in INIT";
    EXPECT_TRUE(s.qp->post_recv(std::span<const RecvWr>(&r, 1)).is_ok()) << "post_recv is allowed from INIT";
    QpConnectAttr attr;
    attr.remote = s.peer_ep;
    ASSERT_TRUE(s.qp->to_rtr(attr).is_ok());
    EXPECT_EQ(post(s, wr, {&g, 1}).code(), Errc::invalid_state) << "in RTR";
  });
}

TEST_P(Conformance, RequestsPostedInErrAreFlushed) {
  if (!caps_.flushes_posts_in_err)
    GTEST_SKIP() << GetParam() << " on this device does not flush requests posted in ERR (Linux 6.1 rxe; fixed in later kernels)";
  with_pair({}, [](Side& s) {
    ASSERT_TRUE(s.qp->to_error().is_ok());
    Sge g = sge(s, 0, 8);
    SendWr wr;
    wr.wr_id = 42;
    wr.opcode = SendOpcode::rdma_write;
    wr.signaled = false;  // flushed requests complete even when unsignaled
    wr.remote_addr = s.peer.addr;
    wr.rkey = s.peer.rkey;
    ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
    Completion wc = wait_one(s);
    EXPECT_EQ(wc.wr_id, 42u);
    EXPECT_EQ(wc.status, WcStatus::wr_flush_err);
    post_recv(s, 7, 0, 8);
    wc = wait_one(s);
    EXPECT_EQ(wc.wr_id, 7u);
    EXPECT_EQ(wc.status, WcStatus::wr_flush_err);
  });
}

// ------------------------------------------------------------------------------------------
// Data movement

TEST_P(Conformance, RdmaWriteMovesTheBytesWithAGatherList) {
  PairOpts o;
  o.caps.max_send_sge = 2;
  if (caps_.max_sge < 2) GTEST_SKIP() << GetParam() << " allows " << caps_.max_sge << " SGE per request";
  with_pair(o, [](Side& s) {
    if (s.rank() == 0) {
      for (int i = 0; i < 300; ++i) s.bytes()[i] = static_cast<std::uint8_t>(i * 7 + 1);
      std::array<Sge, 2> g{sge(s, 0, 100), sge(s, 200, 100)};
      SendWr wr;
      wr.wr_id = 5;
      wr.opcode = SendOpcode::rdma_write;
      wr.remote_addr = s.peer.addr + 1000;
      wr.rkey = s.peer.rkey;
      ASSERT_TRUE(post(s, wr, g).is_ok());
      Completion wc = wait_one(s);
      EXPECT_EQ(wc.status, WcStatus::success);
      EXPECT_EQ(wc.opcode, WcOpcode::rdma_write);
      EXPECT_EQ(wc.wr_id, 5u);
    }
    ASSERT_TRUE(s.env->boot.barrier().is_ok());
    if (s.rank() == 1) {
      for (int i = 0; i < 100; ++i) EXPECT_EQ(s.bytes()[1000 + i], static_cast<std::uint8_t>(i * 7 + 1)) << i;
      for (int i = 0; i < 100; ++i) EXPECT_EQ(s.bytes()[1100 + i], static_cast<std::uint8_t>((200 + i) * 7 + 1)) << i;
      EXPECT_EQ(s.bytes()[999], 0);
      EXPECT_EQ(s.bytes()[1200], 0);
    }
  });
}

TEST_P(Conformance, WriteWithImmediateConsumesAReceiveAndCarriesTheImmediate) {
  if (!caps_.rdma_write_imm) GTEST_SKIP() << GetParam() << " does not advertise write with immediate";
  with_pair({}, [](Side& s) {
    if (s.rank() == 1) post_recv(s, 77, 0, 0);
    ASSERT_TRUE(s.env->boot.barrier().is_ok());
    if (s.rank() == 0) {
      std::memset(s.bytes(), 0xAB, 64);
      Sge g = sge(s, 0, 64);
      SendWr wr;
      wr.opcode = SendOpcode::rdma_write_with_imm;
      wr.imm = 0xC0FFEE;
      wr.remote_addr = s.peer.addr + 128;
      wr.rkey = s.peer.rkey;
      ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
      EXPECT_EQ(wait_one(s).status, WcStatus::success);
    } else {
      Completion wc = wait_one(s);
      EXPECT_EQ(wc.status, WcStatus::success);
      EXPECT_EQ(wc.opcode, WcOpcode::recv_rdma_with_imm);
      EXPECT_EQ(wc.wr_id, 77u);
      EXPECT_TRUE(wc.has_imm);
      EXPECT_EQ(wc.imm, 0xC0FFEEu);
      EXPECT_EQ(wc.byte_len, 64u);
      EXPECT_EQ(s.bytes()[128], 0xAB);
      EXPECT_EQ(s.bytes()[191], 0xAB);
    }
  });
}

TEST_P(Conformance, RdmaReadFetchesRemoteBytes) {
  if (!caps_.rdma_read) GTEST_SKIP() << GetParam() << " does not advertise RDMA read";
  with_pair({}, [](Side& s) {
    if (s.rank() == 1)
      for (int i = 0; i < 512; ++i) s.bytes()[4096 + i] = static_cast<std::uint8_t>(255 - i % 256);
    ASSERT_TRUE(s.env->boot.barrier().is_ok());
    if (s.rank() == 0) {
      Sge g = sge(s, 0, 512);
      SendWr wr;
      wr.wr_id = 9;
      wr.opcode = SendOpcode::rdma_read;
      wr.remote_addr = s.peer.addr + 4096;
      wr.rkey = s.peer.rkey;
      ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
      Completion wc = wait_one(s);
      EXPECT_EQ(wc.status, WcStatus::success);
      EXPECT_EQ(wc.opcode, WcOpcode::rdma_read);
      for (int i = 0; i < 512; ++i) ASSERT_EQ(s.bytes()[i], static_cast<std::uint8_t>(255 - i % 256)) << i;
    }
  });
}

TEST_P(Conformance, SendLandsInThePostedReceiveWithScatter) {
  PairOpts o;
  o.caps.max_recv_sge = 2;
  if (caps_.max_sge < 2) GTEST_SKIP() << GetParam() << " allows " << caps_.max_sge << " SGE per request";
  with_pair(o, [](Side& s) {
    if (s.rank() == 1) {
      std::array<Sge, 2> g{sge(s, 0, 10), sge(s, 100, 90)};
      RecvWr r{31, g};
      ASSERT_TRUE(s.qp->post_recv(std::span<const RecvWr>(&r, 1)).is_ok());
    }
    ASSERT_TRUE(s.env->boot.barrier().is_ok());
    if (s.rank() == 0) {
      for (int i = 0; i < 50; ++i) s.bytes()[i] = static_cast<std::uint8_t>(i + 1);
      Sge g = sge(s, 0, 50);
      SendWr wr;
      wr.opcode = SendOpcode::send_with_imm;
      wr.imm = 3;
      ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
      EXPECT_EQ(wait_one(s).opcode, WcOpcode::send);
    } else {
      Completion wc = wait_one(s);
      EXPECT_EQ(wc.status, WcStatus::success);
      EXPECT_EQ(wc.opcode, WcOpcode::recv);
      EXPECT_EQ(wc.wr_id, 31u);
      EXPECT_EQ(wc.byte_len, 50u);
      EXPECT_TRUE(wc.has_imm);
      EXPECT_EQ(wc.imm, 3u);
      for (int i = 0; i < 10; ++i) EXPECT_EQ(s.bytes()[i], i + 1);
      for (int i = 10; i < 50; ++i) EXPECT_EQ(s.bytes()[100 + i - 10], i + 1);
    }
  });
}

TEST_P(Conformance, AtomicsFetchAddAndCompareSwap) {
  if (!caps_.atomics) GTEST_SKIP() << GetParam() << " does not advertise atomics";
  with_pair({}, [](Side& s) {
    if (s.rank() == 1) {
      std::uint64_t v = 100;
      std::memcpy(s.bytes() + 64, &v, 8);
    }
    ASSERT_TRUE(s.env->boot.barrier().is_ok());
    if (s.rank() == 0) {
      Sge g = sge(s, 0, 8);
      SendWr wr;
      wr.opcode = SendOpcode::atomic_fetch_add;
      wr.remote_addr = s.peer.addr + 64;
      wr.rkey = s.peer.rkey;
      wr.compare_add = 5;
      ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
      Completion wc = wait_one(s);
      EXPECT_EQ(wc.status, WcStatus::success);
      EXPECT_EQ(wc.opcode, WcOpcode::fetch_add);
      std::uint64_t old = 0;
      std::memcpy(&old, s.bytes(), 8);
      EXPECT_EQ(old, 100u);
      // Compare-and-swap that fails (105 != 1) returns the value and changes nothing...
      wr.opcode = SendOpcode::atomic_cmp_swap;
      wr.compare_add = 1;
      wr.swap = 7;
      ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
      EXPECT_EQ(wait_one(s).opcode, WcOpcode::comp_swap);
      std::memcpy(&old, s.bytes(), 8);
      EXPECT_EQ(old, 105u);
      // ...and one that matches swaps.
      wr.compare_add = 105;
      wr.swap = 7;
      ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
      EXPECT_EQ(wait_one(s).status, WcStatus::success);
    }
    ASSERT_TRUE(s.env->boot.barrier().is_ok());
    if (s.rank() == 1) {
      std::uint64_t v = 0;
      std::memcpy(&v, s.bytes() + 64, 8);
      EXPECT_EQ(v, 7u);
    }
  });
}

TEST_P(Conformance, UnsignaledRequestsCompleteOnlyThroughALaterSignaledOne) {
  with_pair({}, [](Side& s) {
    if (s.rank() == 0) {
      Sge g = sge(s, 0, 16);
      SendWr wr;
      wr.opcode = SendOpcode::rdma_write;
      wr.remote_addr = s.peer.addr;
      wr.rkey = s.peer.rkey;
      std::array<SendWr, 4> list{};
      for (int i = 0; i < 4; ++i) {
        list[static_cast<std::size_t>(i)] = wr;
        list[static_cast<std::size_t>(i)].wr_id = static_cast<std::uint64_t>(i);
        list[static_cast<std::size_t>(i)].signaled = i == 3;
        list[static_cast<std::size_t>(i)].sg_list = {&g, 1};
      }
      ASSERT_TRUE(s.qp->post_send(list).is_ok());  // a post list of four
      Completion wc = wait_one(s);
      EXPECT_EQ(wc.wr_id, 3u);
      std::array<Completion, 4> more{};
      auto n = s.cq->poll(more);
      ASSERT_TRUE(n.is_ok());
      EXPECT_EQ(*n, 0u) << "unsignaled requests must not complete";
    }
  });
}

TEST_P(Conformance, InlineDataIsCopiedAtPostTime) {
  if (caps_.max_inline < 32) GTEST_SKIP() << GetParam() << " offers " << caps_.max_inline << " bytes inline";
  PairOpts o;
  o.caps.max_inline = 32;
  with_pair(o, [](Side& s) {
    if (s.rank() == 0) {
      std::memset(s.bytes(), 0x11, 32);
      Sge g = sge(s, 0, 32);
      g.lkey = 0xdeadbeef;  // not checked for inline data
      SendWr wr;
      wr.opcode = SendOpcode::rdma_write;
      wr.inline_data = true;
      wr.remote_addr = s.peer.addr;
      wr.rkey = s.peer.rkey;
      ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
      std::memset(s.bytes(), 0x22, 32);  // the buffer may be reused at once
      EXPECT_EQ(wait_one(s).status, WcStatus::success);
      // Inline over the QP's limit is refused at post time.
      Sge big = sge(s, 0, 33);
      EXPECT_EQ(post(s, wr, {&big, 1}).code(), Errc::invalid_argument);
    }
    ASSERT_TRUE(s.env->boot.barrier().is_ok());
    if (s.rank() == 1) {
      EXPECT_EQ(s.bytes()[0], 0x11);
      EXPECT_EQ(s.bytes()[31], 0x11);
    }
  });
}

// ------------------------------------------------------------------------------------------
// Errors, exactly as verbs reports them

void expect_remote_access_error(Side& s, SendOpcode op, std::uint64_t addr, std::uint32_t rkey, std::uint32_t len) {
  if (s.rank() != 0) return;
  Sge g{s.mr->addr(), len, s.mr->lkey()};
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = op;
  wr.remote_addr = addr;
  wr.rkey = rkey;
  wr.sg_list = {&g, 1};
  ASSERT_TRUE(s.qp->post_send(std::span<const SendWr>(&wr, 1)).is_ok());
  std::array<Completion, 1> wc{};
  auto n = s.cq->wait(wc, kWait);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(wc[0].status, WcStatus::rem_access_err) << wc_status_str(wc[0].status);
  EXPECT_STREQ(wc_status_str(wc[0].status), "remote access error");
  EXPECT_EQ(s.qp->state(), QpState::err) << "a remote access error moves the requester QP to ERR";
  // Whatever is posted next is flushed.
  wr.wr_id = 2;
  wr.opcode = SendOpcode::rdma_write;
  ASSERT_TRUE(s.qp->post_send(std::span<const SendWr>(&wr, 1)).is_ok());
  n = s.cq->wait(wc, kWait);
  ASSERT_TRUE(n.is_ok());
  EXPECT_EQ(wc[0].wr_id, 2u);
  EXPECT_EQ(wc[0].status, WcStatus::wr_flush_err);
}

TEST_P(Conformance, WrongRkeyGivesRemoteAccessError) {
  with_pair({}, [](Side& s) { expect_remote_access_error(s, SendOpcode::rdma_write, s.peer.addr, s.peer.rkey ^ 0x5a5a, 8); });
}

TEST_P(Conformance, WriteOutsideTheRegionGivesRemoteAccessError) {
  with_pair({}, [](Side& s) {
    expect_remote_access_error(s, SendOpcode::rdma_write, s.peer.addr + s.peer.length - 4, s.peer.rkey, 8);
  });
}

TEST_P(Conformance, WriteToARegionWithoutRemoteWriteGivesRemoteAccessError) {
  PairOpts o;
  o.access = kAccessLocalWrite | kAccessRemoteRead;
  with_pair(o, [](Side& s) { expect_remote_access_error(s, SendOpcode::rdma_write, s.peer.addr, s.peer.rkey, 8); });
}

TEST_P(Conformance, ReadFromARegionWithoutRemoteReadGivesRemoteAccessError) {
  if (!caps_.rdma_read) GTEST_SKIP() << GetParam() << " does not advertise RDMA read";
  PairOpts o;
  o.access = kAccessLocalWrite | kAccessRemoteWrite;
  with_pair(o, [](Side& s) { expect_remote_access_error(s, SendOpcode::rdma_read, s.peer.addr, s.peer.rkey, 8); });
}

TEST_P(Conformance, AtomicOnARegionWithoutRemoteAtomicGivesRemoteAccessError) {
  if (!caps_.atomics) GTEST_SKIP() << GetParam() << " does not advertise atomics";
  PairOpts o;
  o.access = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
  with_pair(o, [](Side& s) { expect_remote_access_error(s, SendOpcode::atomic_fetch_add, s.peer.addr, s.peer.rkey, 8); });
}

TEST_P(Conformance, BadLocalKeyGivesLocalProtectionError) {
  with_pair({}, [](Side& s) {
    if (s.rank() != 0) return;
    Sge g{s.mr->addr(), 8, s.mr->lkey() ^ 0x77};
    SendWr wr;
    wr.opcode = SendOpcode::rdma_write;
    wr.remote_addr = s.peer.addr;
    wr.rkey = s.peer.rkey;
    ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
    // A local error; mlx5, loopback and simgrid say loc_prot_err, Linux 6.1's rxe loc_qp_op_err.
    WcStatus st = wait_one(s).status;
    EXPECT_TRUE(st == WcStatus::loc_prot_err || st == WcStatus::loc_qp_op_err) << wc_status_str(st);
    EXPECT_EQ(s.qp->state(), QpState::err);
  });
}

TEST_P(Conformance, SendWithoutAReceiveIsReceiverNotReadyThenFails) {
  PairOpts o;
  o.rnr_retry = 2;  // three tries, then the error
  with_pair(o, [](Side& s) {
    if (s.rank() != 0) return;
    Sge g = sge(s, 0, 8);
    SendWr wr;
    wr.opcode = SendOpcode::send;
    ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
    Completion wc = wait_one(s);
    EXPECT_EQ(wc.status, WcStatus::rnr_retry_exc_err) << wc_status_str(wc.status);
    EXPECT_STREQ(wc_status_str(wc.status), "RNR retry counter exceeded");
    EXPECT_EQ(s.qp->state(), QpState::err);
  });
}

TEST_P(Conformance, ReceiverNotReadyRetriesUntilAReceiveIsPosted) {
  PairOpts o;
  o.rnr_retry = 7;  // retry forever
  o.rnr_timer = 1e-3;
  with_pair(o, [](Side& s) {
    const double t0 = s.env->rt.now();
    if (s.rank() == 0) {
      Sge g = sge(s, 0, 8);
      SendWr wr;
      wr.opcode = SendOpcode::send;
      ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
    }
    ASSERT_TRUE(s.env->boot.barrier().is_ok());
    if (s.rank() == 1) {
      ASSERT_TRUE(s.env->rt.compute(5e-3).is_ok());  // the receiver is late
      post_recv(s, 1, 0, 64);
      EXPECT_EQ(wait_one(s).status, WcStatus::success);
    } else {
      Completion wc = wait_one(s);
      EXPECT_EQ(wc.status, WcStatus::success);
      EXPECT_GE(s.env->rt.now() - t0, 5e-3 * 0.99) << "the send can only complete after the late receive";
    }
  });
}

TEST_P(Conformance, ReceiveTooSmallGivesLocalLengthErrorAtTheReceiver) {
  with_pair({}, [](Side& s) {
    if (s.rank() == 1) post_recv(s, 1, 0, 16);
    ASSERT_TRUE(s.env->boot.barrier().is_ok());
    if (s.rank() == 0) {
      Sge g = sge(s, 0, 64);
      SendWr wr;
      wr.opcode = SendOpcode::send;
      ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
      EXPECT_NE(wait_one(s).status, WcStatus::success);
    } else {
      // The receiver's local error; mlx5 and the reference say loc_len_err, Linux 6.1's rxe
      // loc_qp_op_err.
      WcStatus st = wait_one(s).status;
      EXPECT_TRUE(st == WcStatus::loc_len_err || st == WcStatus::loc_qp_op_err) << wc_status_str(st);
    }
  });
}

TEST_P(Conformance, CompletionQueueOverflowIsReported) {
  PairOpts o;
  o.cq_entries = 4;
  with_pair(o, [](Side& s) {
    if (s.rank() != 0) return;
    Sge g = sge(s, 0, 8);
    SendWr wr;
    wr.opcode = SendOpcode::rdma_write;
    wr.remote_addr = s.peer.addr;
    wr.rkey = s.peer.rkey;
    for (int i = 0; i < 8; ++i) {
      wr.wr_id = static_cast<std::uint64_t>(i);
      ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
    }
    // Give every request time to complete (on simgrid this advances simulated time).
    ASSERT_TRUE(s.env->rt.compute(0.05).is_ok());
    std::array<Completion, 8> wc{};
    auto n = s.cq->poll(wc);
    ASSERT_FALSE(n.is_ok()) << "8 completions into a CQ of 4 must overflow";
    EXPECT_EQ(n.status().code(), Errc::cq_overflow);
  });
}

// n signaled writes of `g` to the peer's region.
std::vector<SendWr> writes_to_peer(const Side& s, const Sge& g, std::size_t n) {
  std::vector<SendWr> list(n);
  for (auto& wr : list) {
    wr.opcode = SendOpcode::rdma_write;
    wr.remote_addr = s.peer.addr;
    wr.rkey = s.peer.rkey;
    wr.signaled = true;
    wr.sg_list = {&g, 1};
  }
  return list;
}

TEST_P(Conformance, PostingMoreThanTheSendQueueHoldsIsRefused) {
  PairOpts o;
  o.caps.max_send_wr = 4;
  with_pair(o, [](Side& s) {
    if (s.rank() != 0) return;
    // Hardware may round the depth up: the QP holds what caps() says, at least what was asked.
    const std::uint32_t depth = s.qp->caps().max_send_wr;
    EXPECT_GE(depth, 4u);
    Sge g = sge(s, 0, 8);
    std::vector<SendWr> list = writes_to_peer(s, g, depth + 2);
    std::size_t bad = 99999;
    Status st = s.qp->post_send(list, &bad);
    EXPECT_EQ(st.code(), Errc::queue_full) << "back-pressure has its own code: " << st.to_string();
    EXPECT_EQ(bad, depth) << "the first " << depth << " were accepted";
    for (std::uint32_t i = 0; i < depth; ++i) EXPECT_EQ(wait_one(s).status, WcStatus::success);
  });
}

TEST_P(Conformance, PostingMoreReceivesThanTheReceiveQueueHoldsIsRefused) {
  PairOpts o;
  o.caps.max_recv_wr = 4;
  with_pair(o, [](Side& s) {
    if (s.rank() != 0) return;
    const std::uint32_t depth = s.qp->caps().max_recv_wr;
    EXPECT_GE(depth, 4u);
    Sge g = sge(s, 0, 8);
    std::vector<RecvWr> list(depth + 2);
    for (std::size_t i = 0; i < list.size(); ++i) list[i] = RecvWr{i, {&g, 1}};
    std::size_t bad = 99999;
    Status st = s.qp->post_recv(list, &bad);
    EXPECT_EQ(st.code(), Errc::queue_full) << "back-pressure has its own code: " << st.to_string();
    EXPECT_EQ(bad, depth) << "the first " << depth << " were accepted";
  });
}

// Taking a completion frees the send queue up to its request, the unsignaled ones before it
// included (as verbs does): a full queue of unsignaled writes ending in a signaled one can be
// posted again and again, one completion each time.
TEST_P(Conformance, TakingACompletionFreesTheSendQueueUpToItsRequest) {
  PairOpts o;
  o.caps.max_send_wr = 4;
  with_pair(o, [](Side& s) {
    if (s.rank() != 0) return;
    const std::uint32_t depth = s.qp->caps().max_send_wr;
    Sge g = sge(s, 0, 8);
    for (std::uint64_t round = 0; round < 3; ++round) {
      std::vector<SendWr> list = writes_to_peer(s, g, depth);
      for (auto& wr : list) wr.signaled = false;
      list.back().signaled = true;
      list.back().wr_id = 100 + round;
      Status st = s.qp->post_send(list);
      ASSERT_TRUE(st.is_ok()) << "round " << round << ": " << st.to_string();
      Completion wc = wait_one(s);
      EXPECT_EQ(wc.status, WcStatus::success);
      EXPECT_EQ(wc.wr_id, 100 + round);
      EXPECT_EQ(wc.qp_num, s.qp->qpn());
    }
  });
}

// A bad request in a list is refused with its index; the ones before it are posted (as
// ibv_post_send does), the ones after it are not.
TEST_P(Conformance, ABadRequestInAListIsRefusedAfterTheOnesBeforeIt) {
  with_pair({}, [](Side& s) {
    if (s.rank() != 0) return;
    Sge g = sge(s, 0, 8);
    std::vector<Sge> too_many(s.qp->caps().max_send_sge + 1, g);
    std::vector<SendWr> list = writes_to_peer(s, g, 3);
    list[0].wr_id = 10;
    list[1].sg_list = too_many;
    std::size_t bad = 99999;
    Status st = s.qp->post_send(list, &bad);
    EXPECT_EQ(st.code(), Errc::invalid_argument) << st.to_string();
    EXPECT_EQ(bad, 1u);
    Completion wc = wait_one(s);
    EXPECT_EQ(wc.status, WcStatus::success);
    EXPECT_EQ(wc.wr_id, 10u) << "the request before the bad one was posted";
    std::array<Completion, 4> more{};
    auto n = s.cq->wait(more, 0.2);
    EXPECT_EQ(n.status().code(), Errc::timeout) << "nothing after the bad one was posted";
  });
}

TEST_P(Conformance, RegistrationChecksAccessFlags) {
  with_pair({}, [](Side& s) {
    auto r = s.pd->register_memory(s.buf.data(), 64, kAccessRemoteWrite);
    EXPECT_EQ(r.status().code(), Errc::invalid_argument) << "remote write without local write is refused, as in verbs";
    auto z = s.pd->register_memory(s.buf.data(), 0, kAccessLocalWrite);
    EXPECT_FALSE(z.is_ok()) << "zero-length registration";
  });
}

TEST_P(Conformance, DeregisteredRegionIsNoLongerReachable) {
  with_pair({}, [](Side& s) {
    // Rank 1 registers a second region, publishes it, then destroys it.
    std::unique_ptr<MemoryRegion> extra;
    RemoteBuffer rb;
    if (s.rank() == 1) {
      auto r = s.pd->register_memory(s.buf.data(), 1024, kAll);
      ASSERT_TRUE(r.is_ok());
      extra = std::move(r).value();
      rb = extra->remote();
    }
    auto all = allgather_value(s.env->boot, rb);
    ASSERT_TRUE(all.is_ok());
    // A region registered after it, over the same memory, gets keys of its own: the old rkey
    // must not reach it (a backend that reuses the freed slot must tell the keys apart).
    std::unique_ptr<MemoryRegion> again;
    if (s.rank() == 1) {
      extra.reset();
      auto r = s.pd->register_memory(s.buf.data(), 1024, kAll);
      ASSERT_TRUE(r.is_ok());
      again = std::move(r).value();
      EXPECT_NE(again->rkey(), (*all)[1].rkey);
    }
    ASSERT_TRUE(s.env->boot.barrier().is_ok());
    if (s.rank() == 0) expect_remote_access_error(s, SendOpcode::rdma_write, (*all)[1].addr, (*all)[1].rkey, 8);
    ASSERT_TRUE(s.env->boot.barrier().is_ok());  // the new region lives until the check is done
  });
}

// ------------------------------------------------------------------------------------------
// Bootstrap and runtime

TEST_P(Conformance, BootstrapAllgatherAndBarrierAcrossRanks) {
  Status st = backend_->launch(test::spec_for(5), [](RankEnv& env) -> Status {
    EXPECT_EQ(env.boot.size(), 5);
    EXPECT_EQ(env.boot.rank(), env.rank);
    for (int round = 0; round < 3; ++round) {
      std::int64_t mine = env.rank * 10 + round;
      RDMALAB_ASSIGN(auto all, allgather_value(env.boot, mine));
      for (int r = 0; r < 5; ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], r * 10 + round);
      RDMALAB_TRY(env.boot.barrier());
    }
    return Status::ok();
  });
  EXPECT_TRUE(st.is_ok()) << st.to_string();
}

TEST_P(Conformance, ARankThatFailsStopsTheOthersWithItsReason) {
  Status st = backend_->launch(test::spec_for(3), [](RankEnv& env) -> Status {
    if (env.rank == 2) return Status(Errc::data, "planted failure");
    return env.boot.barrier();  // must not wait forever for rank 2
  });
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("planted failure"), std::string::npos) << st.to_string();
  EXPECT_NE(st.message().find("rank 2"), std::string::npos) << st.to_string();
}

TEST_P(Conformance, RuntimeClockAndComputeAndByteWait) {
  with_pair({}, [](Side& s) {
    double t0 = s.env->rt.now();
    ASSERT_TRUE(s.env->rt.compute(2e-3).is_ok());
    EXPECT_GE(s.env->rt.now() - t0, 2e-3 * 0.99);
    if (s.rank() == 0) {
      s.bytes()[0] = 0x5c;
      Sge g = sge(s, 0, 1);
      SendWr wr;
      wr.opcode = SendOpcode::rdma_write;
      wr.remote_addr = s.peer.addr + 77;
      wr.rkey = s.peer.rkey;
      ASSERT_TRUE(post(s, wr, {&g, 1}).is_ok());
      EXPECT_EQ(wait_one(s).status, WcStatus::success);
    } else {
      auto* p = reinterpret_cast<volatile std::uint8_t*>(s.bytes() + 77);
      Status st = s.env->rt.wait_for_byte(p, 0x5c, kWait);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      Status late = s.env->rt.wait_for_byte(p, 0x01, 1e-3);
      EXPECT_EQ(late.code(), Errc::timeout);
    }
  });
}

TEST_P(Conformance, CapabilitiesAreConsistent) {
  EXPECT_GE(caps_.max_sge, 1u);
  EXPECT_GT(caps_.max_qp_wr, 0u);
  EXPECT_GT(caps_.max_cq_entries, 0u);
  EXPECT_TRUE(caps_.memory_kinds.has(MemoryKind::host));
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance, ::testing::ValuesIn(usable_backend_names("conformance")),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace rdmalab
