#include "rdmalab/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <optional>
#include <utility>
#include <vector>

namespace rdmalab::units {
namespace {

struct Split {
  double number = 0;
  std::string unit;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<Split> split_number(std::string_view text) {
  text = trim(text);
  auto digit = [&](std::size_t k) { return k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])); };
  std::size_t i = 0;
  while (digit(i)) ++i;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (digit(i)) ++i;
  }
  // An exponent only when digits follow ("1e3B"), so "1EB" is not misread.
  if (i > 0 && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t k = i + 1;
    if (k < text.size() && (text[k] == '-' || text[k] == '+')) ++k;
    if (digit(k)) {
      i = k;
      while (digit(i)) ++i;
    }
  }
  if (i == 0) return std::nullopt;
  Split out;
  auto [p, ec] = std::from_chars(text.data(), text.data() + i, out.number);
  if (ec != std::errc() || p != text.data() + i) return std::nullopt;
  out.unit = std::string(trim(text.substr(i)));
  return out;
}

template <typename T>
std::optional<T> lookup(const std::vector<std::pair<const char*, T>>& table, const std::string& unit) {
  for (const auto& [name, factor] : table)
    if (unit == name) return factor;
  return std::nullopt;
}

template <typename T>
std::string names(const std::vector<std::pair<const char*, T>>& table) {
  std::string s;
  for (const auto& [name, factor] : table) {
    if (!s.empty()) s += ", ";
    s += name;
  }
  return s;
}

const std::vector<std::pair<const char*, double>> kSizeUnits = {
    {"B", 1.0},     {"KB", 1e3},          {"MB", 1e6},          {"GB", 1e9},          {"TB", 1e12},
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
};
const std::vector<std::pair<const char*, double>> kBandwidthUnits = {
    {"bps", 1.0 / 8},        {"Kbps", 1e3 / 8},       {"Mbps", 1e6 / 8},        {"Gbps", 1e9 / 8},
    {"Tbps", 1e12 / 8},      {"B/s", 1.0},            {"KB/s", 1e3},            {"MB/s", 1e6},
    {"GB/s", 1e9},           {"TB/s", 1e12},          {"KiB/s", 1024.0},        {"MiB/s", 1048576.0},
    {"GiB/s", 1073741824.0},
};
const std::vector<std::pair<const char*, double>> kTimeUnits = {
    {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ns", 1e-9}, {"ps", 1e-12},
};

}  // namespace

Result<std::uint64_t> parse_size(std::string_view text) {
  auto sp = split_number(text);
  if (!sp) return Status(Errc::invalid_argument, fmt::format("'{}' is not a size: write a number and a unit ({})", text, names(kSizeUnits)));
  if (sp->unit.empty())
    return Status(Errc::invalid_argument, fmt::format("'{}' has no unit: write {}B for bytes, or use one of {}", text, text, names(kSizeUnits)));
  auto f = lookup(kSizeUnits, sp->unit);
  if (!f) return Status(Errc::invalid_argument, fmt::format("unknown size unit '{}' in '{}' (allowed: {})", sp->unit, text, names(kSizeUnits)));
  double bytes = sp->number * *f;
  if (bytes < 0 || bytes > 1.8e19) return Status(Errc::invalid_argument, fmt::format("size '{}' is out of range", text));
  if (std::abs(bytes - std::round(bytes)) > 1e-6)
    return Status(Errc::invalid_argument, fmt::format("size '{}' is not a whole number of bytes", text));
  return static_cast<std::uint64_t>(std::llround(bytes));
}

Result<double> parse_bandwidth(std::string_view text) {
  auto sp = split_number(text);
  if (!sp) return Status(Errc::invalid_argument, fmt::format("'{}' is not a bandwidth: write a number and a unit ({})", text, names(kBandwidthUnits)));
  if (sp->unit.empty()) return Status(Errc::invalid_argument, fmt::format("'{}' has no unit (allowed: {})", text, names(kBandwidthUnits)));
  auto f = lookup(kBandwidthUnits, sp->unit);
  if (!f) return Status(Errc::invalid_argument, fmt::format("unknown bandwidth unit '{}' in '{}' (allowed: {})", sp->unit, text, names(kBandwidthUnits)));
  double v = sp->number * *f;
  if (!(v > 0) || !std::isfinite(v)) return Status(Errc::invalid_argument, fmt::format("bandwidth '{}' must be positive", text));
  return v;
}

Result<double> parse_time(std::string_view text) {
  auto sp = split_number(text);
  if (!sp) return Status(Errc::invalid_argument, fmt::format("'{}' is not a time: write a number and a unit (s, ms, us, ns, ps)", text));
  if (sp->unit.empty()) return Status(Errc::invalid_argument, fmt::format("'{}' has no unit (allowed: s, ms, us, ns, ps)", text));
  auto f = lookup(kTimeUnits, sp->unit);
  if (!f) return Status(Errc::invalid_argument, fmt::format("unknown time unit '{}' in '{}' (allowed: s, ms, us, ns, ps)", sp->unit, text));
  double v = sp->number * *f;
  if (v < 0 || !std::isfinite(v)) return Status(Errc::invalid_argument, fmt::format("time '{}' must not be negative", text));
  return v;
}

std::string format_size(std::uint64_t bytes) {
  static const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  std::uint64_t v = bytes;
  while (i < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++i;
  }
  return fmt::format("{}{}", v, kNames[i]);
}

std::string format_bandwidth(double bps) {
  double bits = bps * 8;
  if (bits >= 1e12) return fmt::format("{:.4g}Tbps", bits / 1e12);
  if (bits >= 1e9) return fmt::format("{:.4g}Gbps", bits / 1e9);
  if (bits >= 1e6) return fmt::format("{:.4g}Mbps", bits / 1e6);
  return fmt::format("{:.4g}bps", bits);
}

std::string format_time(double s) {
  double a = std::abs(s);
  if (a >= 1.0 || a == 0.0) return fmt::format("{:.4g}s", s);
  if (a >= 1e-3) return fmt::format("{:.4g}ms", s * 1e3);
  if (a >= 1e-6) return fmt::format("{:.4g}us", s * 1e6);
  return fmt::format("{:.4g}ns", s * 1e9);
}

}  // namespace rdmalab::units
