// A TCP rendezvous bootstrap for ranks that are processes, possibly on several machines.
//
// Rank 0 listens on HOST:PORT (bound to that address only) and is the hub: every other rank
// connects to it. Every message carries a magic number, a protocol version, a type and a length,
// all checked before the body is read; the first message of a connection carries the run token,
// and a connection whose token differs is dropped. Every step has a timeout. When a rank dies or
// fails, the hub tells the others (with the rank and its reason) and they stop: no rank waits
// forever.
#pragma once

#include <memory>
#include <string>

#include "rdmalab/bootstrap.h"

namespace rdmalab {

struct TcpBootstrapOptions {
  std::string host = "127.0.0.1";  // rank 0 binds here; others connect here
  int port = 0;                    // 0 (rank 0 only): pick a free port; see TcpBootstrap::port()
  int rank = 0;
  int size = 1;
  std::string token;               // must be the same on every rank
  double connect_timeout_s = 30;   // how long ranks keep trying to reach rank 0 / wait for all ranks
  double step_timeout_s = 120;     // longest wait for one barrier or allgather
};

class TcpBootstrap final : public Bootstrap {
 public:
  ~TcpBootstrap() override;
  // Rank 0 binds and listens (it accepts the others in connect()). Errors: io (bind), invalid_argument.
  static Result<std::unique_ptr<TcpBootstrap>> listen(const TcpBootstrapOptions& opt);
  // Rank 0: accepts size-1 ranks. Others: connect to rank 0. Blocking, bounded by
  // connect_timeout_s. Errors: bootstrap, timeout.
  Status connect();
  int port() const { return port_; }

  int rank() const override { return opt_.rank; }
  int size() const override { return opt_.size; }
  Status barrier() override;
  Result<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override;
  Status health() override;
  // Tells every other rank that this one failed, with the reason (best effort, never blocks long).
  void abort(const std::string& reason);

 private:
  explicit TcpBootstrap(TcpBootstrapOptions opt) : opt_(std::move(opt)) {}
  TcpBootstrapOptions opt_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::vector<int> peers_;  // rank 0: socket per rank (index = rank, [0] unused); others: [0] = hub
  bool failed_ = false;
  std::string failure_;
};

// Parses "HOST:PORT". Errors: invalid_argument.
Result<std::pair<std::string, int>> parse_host_port(const std::string& text);

}  // namespace rdmalab
