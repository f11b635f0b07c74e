// One error type for the whole project: a closed set of codes plus a message.
//
// Backends translate their native errors (errno, ibv_wc_status, SimGrid exceptions) into this
// in exactly one place each. Exceptions are used only at the edges that parse files or draw
// windows, and are caught there.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace rdmalab {

enum class Errc {
  ok = 0,
  invalid_argument,  // a parameter is out of range or malformed
  invalid_state,     // the object is not in a state that allows the call (e.g. post on a QP not in RTS)
  not_supported,     // the backend does not offer this capability
  not_found,         // a named device, port, backend or workload does not exist
  no_memory,         // allocation or registration failed for lack of resources
  permission,        // the OS refused (memlock limit, device permissions)
  timeout,           // a bounded wait expired
  cq_overflow,       // a completion queue overflowed: completions were lost
  transport,         // a completion carried an error status
  bootstrap,         // out-of-band setup failed (peer died, token mismatch, bad message)
  data,              // payload verification found wrong bytes
  io,                // a file or socket could not be read or written
  internal,          // a bug in rdmalab: report it
  cancelled,         // the user stopped the run (dashboard Stop)
  queue_full,        // back-pressure: a send or receive queue holds its most; take completions, then post again
};

const char* errc_name(Errc code) noexcept;

// One pointer: an ok Status (the common case, returned by every post and wait) is a null pointer,
// cheap to make, copy and drop; an error holds its code and message on the heap.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Errc code, std::string message) : rep_(code == Errc::ok ? nullptr : new Rep{code, std::move(message)}) {}
  Status(const Status& o) : rep_(o.rep_ ? new Rep(*o.rep_) : nullptr) {}
  Status(Status&& o) noexcept : rep_(std::exchange(o.rep_, nullptr)) {}
  Status& operator=(const Status& o) {
    Status copy(o);
    std::swap(rep_, copy.rep_);
    return *this;
  }
  Status& operator=(Status&& o) noexcept {
    std::swap(rep_, o.rep_);
    return *this;
  }
  ~Status() { delete rep_; }
  static Status ok() { return {}; }

  bool is_ok() const noexcept { return rep_ == nullptr; }
  explicit operator bool() const noexcept { return is_ok(); }
  Errc code() const noexcept { return rep_ ? rep_->code : Errc::ok; }
  const std::string& message() const noexcept;
  // "invalid_state: post_send on a QP in INIT (must be RTS)"
  std::string to_string() const;
  // Returns a copy whose message is prefixed with `context: `.
  Status with_context(const std::string& context) const;

 private:
  struct Rep {
    Errc code;
    std::string message;
  };
  Rep* rep_ = nullptr;
};

// Result<T>: either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                       // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).is_ok()); }  // NOLINT
  Result(Errc code, std::string message) : v_(Status(code, std::move(message))) {}

  bool is_ok() const noexcept { return std::holds_alternative<T>(v_); }
  explicit operator bool() const noexcept { return is_ok(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T operator*() && { return std::get<T>(std::move(v_)); }
  Status status() const { return is_ok() ? Status::ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rdmalab

// Propagate a non-ok Status from an expression returning Status.
#define RDMALAB_TRY(expr)                         \
  do {                                            \
    ::rdmalab::Status rdmalab_try_s_ = (expr);    \
    if (!rdmalab_try_s_.is_ok()) return rdmalab_try_s_; \
  } while (0)

#define RDMALAB_CONCAT_INNER(a, b) a##b
#define RDMALAB_CONCAT(a, b) RDMALAB_CONCAT_INNER(a, b)
// RDMALAB_ASSIGN(auto x, expr_returning_result): bind the value or return the Status.
#define RDMALAB_ASSIGN(decl, expr) RDMALAB_ASSIGN_IMPL(RDMALAB_CONCAT(rdmalab_r_, __LINE__), decl, expr)
#define RDMALAB_ASSIGN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                         \
  if (!tmp.is_ok()) return tmp.status();     \
  decl = std::move(tmp).value()
