// Loopback: the reference implementation of the transport contract.
//
// One Fabric per launch holds every rank's regions and QPs. Posting only queues a request; an
// engine thread executes requests in posting order per QP (RC ordering), checks keys, bounds and
// access rights exactly as a responder NIC would, copies the bytes, and delivers completions to
// the CQs, where rank threads wait on a condition variable. One big lock keeps the engine simple:
// this backend is about semantics, not speed.
#include "loopback/loopback_backend.h"
#include "loopback/loopback_fabric.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/soft_rc/soft_rc.h"
#include "rdmalab/scenario.h"
#include "rdmalab/run.h"

namespace rdmalab::loopback {
namespace {

using namespace detail;

// Bootstrap among threads: generation-counted rendezvous.
class SharedBootstrap {
 public:
  explicit SharedBootstrap(int size) : size_(size), slots_(static_cast<std::size_t>(size)) {}

  Result<std::vector<std::byte>> allgather(int rank, std::span<const std::byte> mine) {
    std::unique_lock<std::mutex> lock(mu_);
    if (aborted_) return Status(Errc::bootstrap, reason_);
    std::uint64_t gen = generation_;
    slots_[static_cast<std::size_t>(rank)].assign(mine.begin(), mine.end());
    if (++arrived_ == size_) {
      bool same = true;
      for (const auto& s : slots_) same = same && s.size() == mine.size();
      result_.clear();
      mismatch_ = !same;
      if (same)
        for (const auto& s : slots_) result_.insert(result_.end(), s.begin(), s.end());
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
      if (generation_ == gen) return Status(Errc::bootstrap, reason_);
    }
    if (mismatch_) return Status(Errc::invalid_argument, "allgather: ranks contributed different lengths");
    return result_;
  }

  void abort(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return;
    aborted_ = true;
    reason_ = why;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int size_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  bool aborted_ = false;
  bool mismatch_ = false;
  std::string reason_;
  std::vector<std::vector<std::byte>> slots_;
  std::vector<std::byte> result_;
};

class RankBootstrap final : public Bootstrap {
 public:
  RankBootstrap(SharedBootstrap& s, int rank, int size) : s_(s), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status barrier() override { return s_.allgather(rank_, {}).status(); }
  Result<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override { return s_.allgather(rank_, mine); }

 private:
  SharedBootstrap& s_;
  int rank_, size_;
};

class WallRuntime final : public Runtime {
 public:
  WallRuntime(Clock::time_point t0, Fabric& f) : t0_(t0), f_(f) {}
  double now() override { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  Status compute(double seconds) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return Status::ok();
  }
  std::optional<CpuTimes> cpu_times() override { return read_cpu_times(); }
  Status wait_for_byte(const volatile std::uint8_t* addr, std::uint8_t value, double timeout_s) override {
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    for (std::uint64_t spins = 0;; ++spins) {
      if (*addr == value) {
        std::atomic_thread_fence(std::memory_order_acquire);
        return Status::ok();
      }
      if ((spins & 1023) == 0) {
        if (f_.aborted_) return Status(Errc::bootstrap, f_.abort_reason_);
        if (Clock::now() > deadline) return Status(Errc::timeout, fmt::format("byte not written within {}s", timeout_s));
        std::this_thread::yield();
      }
    }
  }

 private:
  Clock::time_point t0_;
  Fabric& f_;
};

class LoopbackBackend final : public Backend {
 public:
  std::string name() const override { return "loopback"; }
  std::string description() const override { return "ranks as threads of one process, real copies; the reference for the contract"; }
  Availability availability() const override { return {true, ""}; }
  int default_preference() const override { return 1; }  // the reference, where the model is not built
  Capabilities capabilities() const override { return loopback_caps(); }

  void add_keys(Schema& schema) const override {
    schema.add(KeySpec{"loopback.corrupt_every", ValueType::integer, "0",
                       "fault injection: flip one byte in every Nth payload delivered (0 = off), to watch payload checks catch it",
                       {}, 0, 1e12});
  }

  Status check(const Scenario& sc) const override {
    if (sc.get_int("fabric.nodes") * sc.get_int("fabric.gpus_per_node") > kMaxRanks)
      return sc.error("fabric.nodes", fmt::format("loopback runs every rank as a thread: at most {} ranks (use simgrid for more)", kMaxRanks));
    // dmabuf and peermem are how a NIC reaches GPU memory; loopback has no NIC: its ranks copy
    // GPU memory with the GPU's own copies, which is what auto does here.
    const std::string path = sc.get_string("workload.gpu_path");
    if (sc.is_set("workload.gpu_path") && (path == "dmabuf" || path == "peermem"))
      return sc.error("workload.gpu_path", fmt::format("{} is how a NIC reaches GPU memory; the loopback backend has no NIC and copies GPU "
                                                       "memory directly: use auto (direct copies) or staged (host bounce buffers)", path));
    return Status::ok();
  }

  // A stop request wakes every rank's wait (see launch).
  bool can_cancel() const override { return true; }

  Status launch(const LaunchSpec& spec, const RankMain& main) override {
    if (spec.ranks < 1 || spec.ranks > kMaxRanks)
      return Status(Errc::invalid_argument, fmt::format("loopback runs 1..{} ranks (asked {})", kMaxRanks, spec.ranks));
    std::uint64_t corrupt = spec.scenario && spec.scenario->has("loopback.corrupt_every")
                                ? static_cast<std::uint64_t>(spec.scenario->get_int("loopback.corrupt_every"))
                                : 0;
    Fabric fabric(corrupt);
    SharedBootstrap shared(spec.ranks);
    const auto t0 = Clock::now();
    std::vector<Status> results(static_cast<std::size_t>(spec.ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < spec.ranks; ++r) {
      threads.emplace_back([&, r] {
        std::unique_ptr<Device> dev = make_device(fabric, r);
        RankBootstrap boot(shared, r, spec.ranks);
        WallRuntime rt(t0, fabric);
        RankEnv env{r, spec.ranks, boot, rt, *dev, host_memory(), scenario_node_shape(spec.scenario, spec.ranks)};
        Status st;
        try {
          st = main(env);
        } catch (const std::exception& e) {
          st = Status(Errc::internal, fmt::format("uncaught exception: {}", e.what()));
        }
        if (!st) {
          // Wake every other rank: they must not wait for one that has stopped.
          std::string why = fmt::format("rank {} stopped: {}", r, st.message());
          shared.abort(why);
          fabric.abort(why);
        }
        results[static_cast<std::size_t>(r)] = st;
      });
    }
    // A stop request (LaunchSpec::cancel) wakes every rank the way a failed rank does: their
    // waits return, and the run ends cancelled.
    std::atomic<bool> ended{false};
    std::atomic<bool> stopped{false};
    std::thread watcher;
    if (spec.cancel)
      watcher = std::thread([&] {
        while (!ended.load()) {
          if (spec.cancel->load()) {
            stopped = true;
            shared.abort("stopped by the user");
            fabric.abort("stopped by the user");
            return;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      });
    for (auto& t : threads) t.join();
    ended = true;
    if (watcher.joinable()) watcher.join();
    if (stopped) return Status(Errc::cancelled, "stopped by the user");
    return first_failure(results);
  }

 private:
  static constexpr int kMaxRanks = 1024;
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<LoopbackBackend>(); }

}  // namespace rdmalab::loopback
