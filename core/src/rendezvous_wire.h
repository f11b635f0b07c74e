// The TCP rendezvous's wire format and the checks rank 0 makes on what strangers send, as pure
// functions of the bytes (no sockets): tcp_bootstrap.cc runs them on every connection, and the
// fuzz target tests/fuzz/rendezvous_fuzz.cc runs them on any bytes.
//
// A message: magic (4), version (2), type (2), body length (4), all in network order, then the
// body. The first message of a connection is a hello: rank (4), size (4), then the run token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmalab/status.h"

namespace rdmalab::rendezvous {

constexpr std::uint32_t kMagic = 0x52444D4C;  // "RDML"
constexpr std::uint16_t kVersion = 1;
constexpr std::uint32_t kMaxLen = 256u << 20;  // largest body a joined rank may announce
constexpr std::uint32_t kMaxToken = 1024;      // bytes of run token a hello may carry
constexpr std::size_t kHeaderBytes = 12;
enum MsgType : std::uint16_t { kHello = 1, kWelcome = 2, kData = 3, kAbort = 4, kBye = 5 };

struct Header {
  std::uint32_t magic = 0, len = 0;
  std::uint16_t version = 0, type = 0;
};

// Decodes the first kHeaderBytes of h (the caller has that many).
Header decode_header(const unsigned char* h);
// The header of a message of type `type` with a body of `len` bytes.
void encode_header(unsigned char* h, std::uint16_t type, std::uint32_t len);
// A joined peer's header, before its body is read: magic, version, known type, length at most
// kMaxLen. Errors (Errc::bootstrap) name `who` and what was wrong.
Status check_header(const Header& h, const std::string& who);

// The hello's body: rank, size, token.
std::vector<std::byte> hello_body(int rank, int size, const std::string& token);

// What rank 0 does with the bytes a connection has sent so far, before it is a rank.
struct HelloVerdict {
  enum Kind { need_more, accept, drop } kind = need_more;
  std::uint32_t rank = 0;  // accept: the rank that joins
  std::string why;         // drop: said on rank 0's stderr and, when tell, to the joiner
  bool tell = false;       // drop: the joiner is told why (it speaks the protocol)
  bool fatal = false;      // drop: the run cannot go on (the same rank twice, a size that differs)
};
// `joined[r]` says whether rank r has joined already (size entries). The hello's length is checked
// against its header before any of the body is kept, so a stranger can make rank 0 hold at most
// kHeaderBytes + 8 + kMaxToken bytes.
HelloVerdict check_hello(std::span<const unsigned char> buf, const std::string& token, int size,
                         const std::vector<bool>& joined);

// Text a peer sent (an abort's reason), as it may be shown on a terminal: at most 512 characters,
// control characters and bytes that are not printable ASCII written as \xNN.
std::string printable(std::string_view peer_text);

}  // namespace rdmalab::rendezvous
