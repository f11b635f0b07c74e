#include "rdmalab/status.h"

namespace rdmalab {

const char* errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::ok: return "ok";
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::invalid_state: return "invalid_state";
    case Errc::not_supported: return "not_supported";
    case Errc::not_found: return "not_found";
    case Errc::no_memory: return "no_memory";
    case Errc::queue_full: return "queue_full";
    case Errc::permission: return "permission";
    case Errc::timeout: return "timeout";
    case Errc::cq_overflow: return "cq_overflow";
    case Errc::transport: return "transport";
    case Errc::bootstrap: return "bootstrap";
    case Errc::data: return "data";
    case Errc::io: return "io";
    case Errc::internal: return "internal";
    case Errc::cancelled: return "cancelled";
  }
  return "unknown";
}

const std::string& Status::message() const noexcept {
  static const std::string none;
  return rep_ ? rep_->message : none;
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(errc_name(rep_->code)) + ": " + rep_->message;
}

Status Status::with_context(const std::string& context) const {
  if (is_ok()) return *this;
  return Status(rep_->code, context + ": " + rep_->message);
}

}  // namespace rdmalab
