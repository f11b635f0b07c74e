// The contract's defaults: a backend that implements only the accessors gets "not supported",
// naming the operation, from every operation it has not written yet (transport.h, "Starting small").
#include <gtest/gtest.h>

#include "rdmalab/transport.h"

namespace rdmalab {
namespace {

class BareQp final : public QueuePair {
 public:
  std::uint32_t qpn() const override { return 7; }
  QpState state() const override { return QpState::reset; }
  QpEndpoint endpoint() const override { return {}; }
  QpCaps caps() const override { return {}; }
};

class BareDevice final : public Device {
 public:
  std::string name() const override { return "bare"; }
  const Capabilities& caps() const override { return caps_; }

 private:
  Capabilities caps_;
};

class BareCq final : public CompletionQueue {
 public:
  std::uint32_t capacity() const override { return 1; }
};

TEST(Contract, OperationsABackendHasNotWrittenAnswerNotSupportedByName) {
  BareQp qp;
  const Status init = qp.to_init();
  EXPECT_EQ(init.code(), Errc::not_supported);
  EXPECT_NE(init.message().find("QueuePair::to_init"), std::string::npos) << init.message();
  EXPECT_EQ(qp.to_rtr({}).code(), Errc::not_supported);
  EXPECT_EQ(qp.to_rts().code(), Errc::not_supported);
  EXPECT_EQ(qp.to_error().code(), Errc::not_supported);
  EXPECT_EQ(qp.reset().code(), Errc::not_supported);
  EXPECT_EQ(qp.post_send({}).code(), Errc::not_supported);
  const Status recv = qp.post_recv({});
  EXPECT_NE(recv.message().find("QueuePair::post_recv"), std::string::npos) << recv.message();

  BareDevice dev;
  auto pd = dev.alloc_pd();
  ASSERT_FALSE(pd);
  EXPECT_EQ(pd.status().code(), Errc::not_supported);
  EXPECT_NE(pd.status().message().find("Device::alloc_pd"), std::string::npos);
  EXPECT_EQ(dev.create_cq(4).status().code(), Errc::not_supported);
  EXPECT_EQ(dev.switch_collective({}).code(), Errc::not_supported);

  BareCq cq;
  Completion wc;
  EXPECT_EQ(cq.poll({&wc, 1}).status().code(), Errc::not_supported);
  EXPECT_EQ(cq.wait({&wc, 1}, 1.0).status().code(), Errc::not_supported);
}

TEST(Contract, BackPressureHasItsOwnCode) {
  EXPECT_STREQ(errc_name(Errc::queue_full), "queue_full");
  EXPECT_NE(Errc::queue_full, Errc::no_memory);
}

}  // namespace
}  // namespace rdmalab
