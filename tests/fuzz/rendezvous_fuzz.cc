// libFuzzer target: what the TCP rendezvous's rank 0 does with bytes from a stranger, and with a
// joined peer's message headers and abort texts (core/src/rendezvous_wire.h, the functions
// tcp_bootstrap.cc runs on every connection). Any bytes, fed in any split, give a verdict that
// holds: never a crash, never a rank outside the run, never a rank accepted twice, never a body
// kept past the hello's size, never a refusal without a reason, never a control character in a
// peer's text as shown. Built and run for a fixed time by tests/fuzz/run.sh (ctest fuzz.rendezvous).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../../core/src/rendezvous_wire.h"

using namespace rdmalab::rendezvous;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // The first byte picks the run's size (1..16) and which ranks have joined; the rest is what
  // the stranger sends, fed as it could arrive: a few bytes at a time.
  const int run_size = 1 + (data[0] & 0x0f);
  std::vector<bool> joined(static_cast<std::size_t>(run_size));
  joined[0] = true;
  for (int r = 1; r < run_size; ++r) joined[static_cast<std::size_t>(r)] = (data[1] >> (r % 8)) & 1;
  const std::string token = "fuzz-token";
  const std::uint8_t* bytes = data + 2;
  const std::size_t n = size - 2;
  std::vector<unsigned char> buf;
  const std::size_t step = 1 + (data[0] >> 4);  // arrival granularity, 1..16 bytes
  for (std::size_t at = 0; at < n; at += step) {
    buf.insert(buf.end(), bytes + at, bytes + std::min(n, at + step));
    const HelloVerdict v = check_hello(buf, token, run_size, joined);
    if (v.kind == HelloVerdict::need_more) {
      // Rank 0 keeps at most a header, a hello and one read's worth of extra bytes.
      if (buf.size() > kHeaderBytes + 8 + kMaxToken + 16) __builtin_trap();
      continue;
    }
    if (v.kind == HelloVerdict::drop && v.why.empty()) __builtin_trap();  // every refusal says why
    if (v.kind == HelloVerdict::accept) {
      if (v.rank == 0 || v.rank >= static_cast<std::uint32_t>(run_size) || joined[v.rank]) __builtin_trap();
      if (buf.size() < kHeaderBytes + 8 + token.size()) __builtin_trap();
    }
    break;
  }
  // The same bytes as a joined peer's message: its header is checked before its body is read.
  if (n >= kHeaderBytes) {
    const Header h = decode_header(bytes);
    const rdmalab::Status st = check_header(h, "rank 1");
    if (st && (h.len > kMaxLen || h.magic != kMagic || h.type < kHello || h.type > kBye)) __builtin_trap();
    if (!st && st.message().empty()) __builtin_trap();
  }
  // The same bytes as a peer's abort text: shown bounded, no control character left.
  const std::string shown = printable(std::string_view(reinterpret_cast<const char*>(bytes), n));
  if (shown.size() > 512 * 4 + 64) __builtin_trap();
  for (const char c : shown) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) __builtin_trap();
  }
  return 0;
}
