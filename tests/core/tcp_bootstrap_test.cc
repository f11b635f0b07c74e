// The TCP rendezvous: real sockets on 127.0.0.1, ranks as threads or processes.
#include "rdmalab/tcp_bootstrap.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace rdmalab {
namespace {

TcpBootstrapOptions opts(int rank, int size, int port = 0, const std::string& token = "secret") {
  TcpBootstrapOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.rank = rank;
  o.size = size;
  o.token = token;
  o.connect_timeout_s = 5;
  o.step_timeout_s = 5;
  return o;
}

// Rank 0 in this thread, the others in threads; each runs `body` after connecting.
void run_ranks(int size, const std::function<void(TcpBootstrap&)>& body) {
  auto hub = TcpBootstrap::listen(opts(0, size));
  ASSERT_TRUE(hub.is_ok()) << hub.status().message();
  int port = hub.value()->port();
  std::vector<std::thread> threads;
  for (int r = 1; r < size; ++r)
    threads.emplace_back([&, r] {
      auto b = TcpBootstrap::listen(opts(r, size, port));
      ASSERT_TRUE(b.is_ok());
      Status st = b.value()->connect();
      ASSERT_TRUE(st.is_ok()) << st.message();
      body(*b.value());
    });
  Status st = hub.value()->connect();
  ASSERT_TRUE(st.is_ok()) << st.message();
  body(*hub.value());
  for (auto& t : threads) t.join();
}

int raw_connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 100 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return fd;
}

TEST(TcpBootstrap, AllgatherAndBarrierAcrossFourRanks) {
  run_ranks(4, [](TcpBootstrap& b) {
    for (int round = 0; round < 5; ++round) {
      std::uint64_t mine = static_cast<std::uint64_t>(b.rank() * 100 + round);
      auto all = allgather_value(b, mine);
      ASSERT_TRUE(all.is_ok()) << all.status().message();
      for (int r = 0; r < 4; ++r) EXPECT_EQ((*all)[static_cast<std::size_t>(r)], static_cast<std::uint64_t>(r * 100 + round));
      EXPECT_TRUE(b.barrier().is_ok());
      EXPECT_TRUE(b.health().is_ok());
    }
  });
}

TEST(TcpBootstrap, AGarbledMessageIsDroppedBeforeItsBodyIsRead) {
  auto hub = TcpBootstrap::listen(opts(0, 2));
  ASSERT_TRUE(hub.is_ok());
  int port = hub.value()->port();
  std::thread garbler([&] {
    int fd = raw_connect(port);
    // A header announcing a 4 GiB body of an unknown protocol, then nothing.
    const char junk[] = "GET / HTTP/1.1\r\n\r\n";
    ASSERT_GT(::send(fd, junk, sizeof junk - 1, 0), 0);
    char c;
    EXPECT_LE(::recv(fd, &c, 1, 0), 0) << "the hub closes (or resets) the connection";
    ::close(fd);
  });
  std::thread member([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto b = TcpBootstrap::listen(opts(1, 2, port));
    ASSERT_TRUE(b.is_ok());
    ASSERT_TRUE(b.value()->connect().is_ok());
    EXPECT_TRUE(b.value()->barrier().is_ok());
  });
  Status st = hub.value()->connect();
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_TRUE(hub.value()->barrier().is_ok());
  garbler.join();
  member.join();
}

// A hello as the protocol writes it (docs/transport-contract.md): header, rank, size, token;
// `len` overrides the announced body length.
void send_hello(int fd, std::uint32_t rank, std::uint32_t size, const std::string& token, std::int64_t len = -1) {
  unsigned char h[20];
  const std::uint32_t m = htonl(0x52444D4C), l = htonl(static_cast<std::uint32_t>(len >= 0 ? len : 8 + static_cast<std::int64_t>(token.size())));
  const std::uint16_t v = htons(1), t = htons(1);
  const std::uint32_t r = htonl(rank), sz = htonl(size);
  std::memcpy(h, &m, 4), std::memcpy(h + 4, &v, 2), std::memcpy(h + 6, &t, 2), std::memcpy(h + 8, &l, 4);
  std::memcpy(h + 12, &r, 4), std::memcpy(h + 16, &sz, 4);
  ASSERT_EQ(::send(fd, h, sizeof h, MSG_NOSIGNAL), 20);
  if (!token.empty()) {
    ASSERT_EQ(::send(fd, token.data(), token.size(), MSG_NOSIGNAL), static_cast<ssize_t>(token.size()));
  }
}

TEST(TcpBootstrap, AJoinerWithTheWrongTokenIsToldWhy) {
  auto hub = TcpBootstrap::listen(opts(0, 2));
  ASSERT_TRUE(hub.is_ok());
  const int port = hub.value()->port();
  Status hub_st;
  std::thread rank0([&] { hub_st = hub.value()->connect(); });
  auto wrong = TcpBootstrap::listen(opts(1, 2, port, "guessed"));
  ASSERT_TRUE(wrong.is_ok());
  Status st = wrong.value()->connect();
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("wrong run token"), std::string::npos) << st.message();
  auto right = TcpBootstrap::listen(opts(1, 2, port));
  ASSERT_TRUE(right.is_ok());
  EXPECT_TRUE(right.value()->connect().is_ok());
  rank0.join();
  EXPECT_TRUE(hub_st.is_ok()) << hub_st.message();
}

// A rank number of 2^31 or more (negative as an int) is refused by name, not used as an index.
TEST(TcpBootstrap, ARankBeyondTheRunIsRefusedNotUsed) {
  for (std::uint32_t rank : {0x80000001u, 0xFFFFFFFFu, 2u}) {
    auto hub = TcpBootstrap::listen(opts(0, 2));
    ASSERT_TRUE(hub.is_ok());
    const int port = hub.value()->port();
    std::thread joiner([&] {
      int fd = raw_connect(port);
      send_hello(fd, rank, 2, "secret");
      char c[256];
      while (::recv(fd, c, sizeof c, 0) > 0) {
      }
      ::close(fd);
    });
    Status st = hub.value()->connect();
    joiner.join();
    EXPECT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find(fmt::format("rank {} is not in 1..1", rank)), std::string::npos) << st.message();
  }
}

// Strangers that connect and say nothing, or announce a huge hello, hold nothing up: a real rank
// joins at once while they wait, and no memory is set aside for what a header claims.
TEST(TcpBootstrap, IdleAndOversizedConnectionsDoNotHoldUpAJoin) {
  auto hub = TcpBootstrap::listen(opts(0, 2));
  ASSERT_TRUE(hub.is_ok());
  const int port = hub.value()->port();
  Status hub_st;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread rank0([&] { hub_st = hub.value()->connect(); });
  std::vector<int> idle;
  for (int i = 0; i < 10; ++i) idle.push_back(raw_connect(port));
  int big = raw_connect(port);
  send_hello(big, 1, 2, "", 256 << 20);
  char c;
  EXPECT_LE(::recv(big, &c, 1, 0), 0) << "an oversized hello is dropped at its header";
  ::close(big);
  auto member = TcpBootstrap::listen(opts(1, 2, port));
  ASSERT_TRUE(member.is_ok());
  EXPECT_TRUE(member.value()->connect().is_ok());
  rank0.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(hub_st.is_ok()) << hub_st.message();
  EXPECT_LT(s, 3.0) << "ten idle connections held up the join";
  for (int fd : idle) ::close(fd);
}

TEST(TcpBootstrap, AKilledPeerStopsTheOthersWithItsRankNamed) {
  auto hub = TcpBootstrap::listen(opts(0, 3));
  ASSERT_TRUE(hub.is_ok());
  int port = hub.value()->port();
  std::fflush(stdout);
  pid_t victim = ::fork();
  if (victim == 0) {
    auto b = TcpBootstrap::listen(opts(2, 3, port));
    if (!b || !b.value()->connect()) _exit(1);
    ::pause();  // killed by the test
    _exit(0);
  }
  std::thread survivor([&] {
    auto b = TcpBootstrap::listen(opts(1, 3, port));
    ASSERT_TRUE(b.is_ok());
    ASSERT_TRUE(b.value()->connect().is_ok());
    auto t0 = std::chrono::steady_clock::now();
    Status st = b.value()->barrier();
    EXPECT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("rank 2"), std::string::npos) << st.message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  });
  ASSERT_TRUE(hub.value()->connect().is_ok());
  ::kill(victim, SIGKILL);
  ::waitpid(victim, nullptr, 0);
  Status st = hub.value()->barrier();
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("rank 2"), std::string::npos) << st.message();
  survivor.join();
}

TEST(TcpBootstrap, ARankThatNeverJoinsIsNamedAfterTheTimeout) {
  auto o = opts(0, 3);
  o.connect_timeout_s = 0.5;
  auto hub = TcpBootstrap::listen(o);
  ASSERT_TRUE(hub.is_ok());
  int port = hub.value()->port();
  std::thread one([&] {
    auto b = TcpBootstrap::listen(opts(1, 3, port));
    ASSERT_TRUE(b.is_ok());
    (void)b.value()->connect();
  });
  Status st = hub.value()->connect();
  EXPECT_EQ(st.code(), Errc::timeout);
  EXPECT_NE(st.message().find("ranks 2 did not join"), std::string::npos) << st.message();
  one.join();
}

// A peer's abort reason reaches the others as text a terminal can show: escape sequences and
// other control bytes written as \xNN, the length bounded (a hostile or broken peer cannot
// clear the screen or flood the log).
TEST(TcpBootstrap, APeersReasonIsShownWithoutControlCharacters) {
  auto hub = TcpBootstrap::listen(opts(0, 2));
  ASSERT_TRUE(hub.is_ok());
  const int port = hub.value()->port();
  std::thread peer([&] {
    auto b = TcpBootstrap::listen(opts(1, 2, port));
    ASSERT_TRUE(b.is_ok());
    ASSERT_TRUE(b.value()->connect().is_ok());
    b.value()->abort("\x1b[2J\x1b]0;owned\x07 and \xc2\x9b then " + std::string(4000, 'x'));
  });
  ASSERT_TRUE(hub.value()->connect().is_ok());
  peer.join();
  const Status st = hub.value()->barrier();
  ASSERT_FALSE(st.is_ok());
  const std::string& m = st.message();
  for (const char c : m) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << m;
  EXPECT_NE(m.find("\\x1b[2J"), std::string::npos) << m;
  EXPECT_NE(m.find("\\xc2\\x9b"), std::string::npos) << "a C1 control (CSI) in UTF-8 is escaped too: " << m;
  EXPECT_NE(m.find("bytes in all"), std::string::npos) << m;
  EXPECT_LT(m.size(), 1000u) << m;
}

TEST(TcpBootstrap, HostPortParsing) {
  EXPECT_TRUE(parse_host_port("10.0.0.1:18515").is_ok());
  EXPECT_EQ(parse_host_port("[::1]:99")->first, "::1");
  EXPECT_FALSE(parse_host_port("10.0.0.1").is_ok());
  EXPECT_FALSE(parse_host_port("host:0").is_ok());
  EXPECT_FALSE(parse_host_port("host:http").is_ok());
  EXPECT_FALSE(TcpBootstrap::listen(opts(5, 3)).is_ok()) << "rank outside 0..size-1";
}

}  // namespace
}  // namespace rdmalab
