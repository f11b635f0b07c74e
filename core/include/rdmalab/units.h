// Quantities with units, as a person types them: 64KiB, 100Gbps, 12.5GB/s, 1.5us.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rdmalab/status.h"

namespace rdmalab::units {

// Bytes. Accepts B, KB, MB, GB, TB (powers of 10) and KiB, MiB, GiB, TiB (powers of 2); a
// number is required before the unit and the unit is required ("65536" alone is refused with a
// hint). Fractions are allowed when they give a whole number of bytes (1.5KiB).
Result<std::uint64_t> parse_size(std::string_view text);
// Bytes per second. Bit rates: bps, Kbps, Mbps, Gbps, Tbps (10^3 steps, bits);
// byte rates: B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s.
Result<double> parse_bandwidth(std::string_view text);
// Seconds. Units: s, ms, us (or µs), ns, ps.
Result<double> parse_time(std::string_view text);

// Human forms, used in tables and messages: 64KiB, 100Gbps, 1.5us.
std::string format_size(std::uint64_t bytes);
std::string format_bandwidth(double bytes_per_s);
std::string format_time(double seconds);

}  // namespace rdmalab::units
