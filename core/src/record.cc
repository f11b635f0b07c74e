#include "rdmalab/record.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <algorithm>

#include <nlohmann/json.hpp>

namespace rdmalab {

using json = nlohmann::json;

Status RecordWriter::open(const std::string& path, bool append) {
  path_ = path;
  if (append) {
    // A writer that was killed (a stopped run) may have left half a line: drop it, so the lines
    // added now stay readable.
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (in) {
      // Look back from the end, a block at a time, for the last newline.
      const std::streamoff size = in.tellg();
      std::streamoff keep = size;
      char last = '\n';
      if (size > 0) {
        in.seekg(size - 1);
        in.get(last);
      }
      if (last != '\n') {
        keep = 0;
        std::string block;
        for (std::streamoff end = size; end > 0 && keep == 0;) {
          const std::streamoff start = std::max<std::streamoff>(0, end - 65536);
          block.resize(static_cast<std::size_t>(end - start));
          in.seekg(start);
          in.read(block.data(), static_cast<std::streamsize>(block.size()));
          const auto nl = block.rfind('\n');
          if (nl != std::string::npos) keep = start + static_cast<std::streamoff>(nl) + 1;
          end = start;
        }
        in.close();
        std::error_code ec;
        std::filesystem::resize_file(path, static_cast<std::uintmax_t>(keep), ec);
        if (ec) return Status(Errc::io, fmt::format("{}: cannot drop the unfinished last line ({})", path, ec.message()));
      }
    }
  }
  out_.open(path, append ? std::ios::app : std::ios::trunc);
  if (!out_) return Status(Errc::io, fmt::format("{}: cannot write the record ({})", path, std::strerror(errno)));
  return Status::ok();
}

void RecordWriter::header(const std::string& scenario, const std::string& backend, int ranks, double interval_s) {
  out_ << json{{"type", "header"}, {"format", "rdmalab-record"}, {"version", 1}, {"scenario", scenario},
               {"backend", backend}, {"ranks", ranks}, {"interval_s", interval_s}}.dump()
       << '\n';
}

void RecordWriter::topology(const Topology& t) {
  json nodes = json::array(), links = json::array();
  for (const auto& n : t.nodes) {
    json jn{{"name", n.name}, {"kind", n.kind}, {"rank", n.rank}, {"tier", n.tier}};
    if (n.group >= 0) jn["group"] = n.group;
    if (n.gpus > 0) {
      jn["gpus"] = n.gpus;
      jn["nics"] = n.nics;
      jn["pcie_switches"] = n.pcie_switches;
      jn["sockets"] = n.sockets;
      jn["gpu_switch"] = n.gpu_switch;
      jn["nic_switch"] = n.nic_switch;
      jn["switch_socket"] = n.switch_socket;
      jn["gpu_nic"] = n.gpu_nic;
    }
    nodes.push_back(std::move(jn));
  }
  for (const auto& l : t.links)
    links.push_back({{"name", l.name}, {"bandwidth_Bps", l.bandwidth_Bps}, {"latency_s", l.latency_s}, {"ends", l.ends}});
  out_ << json{{"type", "topology"}, {"nodes", nodes}, {"links", links}}.dump() << '\n';
}

void RecordWriter::route(const Route& r) {
  out_ << json{{"type", "route"}, {"src", r.src}, {"dst", r.dst}, {"links", r.links}}.dump() << '\n';
}

void RecordWriter::monitor(const Monitor& m) {
  out_ << json{{"type", "monitor"}, {"port", m.port}, {"counters", m.counters}, {"gpu", m.gpu}}.dump() << '\n';
}

void RecordWriter::sample(const Sample& s) {
  json util = json::array();
  for (const auto& [i, u] : s.link_util) util.push_back({i, u});
  json j{{"type", "sample"}, {"t", s.t}, {"link_util", util}, {"rank_tx_Bps", s.rank_tx_Bps}};
  if (!s.flows.empty()) j["flows"] = s.flows;
  if (!s.rank_cpu.empty()) j["rank_cpu"] = s.rank_cpu;
  if (!s.port.empty()) {
    json port = json::object();
    for (const auto& [name, rate] : s.port) port[name] = rate;
    j["port"] = port;
  }
  if (!s.gpu.empty()) {
    json gpus = json::array();
    for (const auto& g : s.gpu) gpus.push_back({{"index", g.index}, {"util", g.util}, {"mem_used", g.mem_used}, {"mem_total", g.mem_total}});
    j["gpu"] = gpus;
  }
  out_ << j.dump() << '\n';
  // A reader may follow the file while it grows (the dashboard's live view): hand it over to
  // the OS about ten times a second of wall time, not after every sample.
  auto now = std::chrono::steady_clock::now();
  if (now - last_flush_ > std::chrono::milliseconds(100)) {
    out_.flush();
    last_flush_ = now;
  }
}

void RecordWriter::rows(const std::vector<ResultRow>& rows) {
  out_ << "{\"type\":\"rows\",\"rows\":" << rows_to_json(rows) << "}\n";
}

void RecordWriter::end(const std::string& status) { out_ << json{{"type", "end"}, {"status", status}}.dump() << '\n'; }

Status RecordWriter::close() {
  out_.flush();
  bool ok = static_cast<bool>(out_);
  out_.close();
  if (!ok) return Status(Errc::io, fmt::format("{}: writing the record failed", path_));
  return Status::ok();
}

namespace {

// Adds one line of a record to `r`. Errors name the file and line.
Status apply_line(Record& r, bool& header, const std::string& line, const std::string& path, int lineno) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string())
    return Status(Errc::invalid_argument, fmt::format("{}:{}: not a record line (expected a JSON object with \"type\")", path, lineno));
  const std::string type = j["type"].get<std::string>();
  if (!header && type != "header")
    return Status(Errc::invalid_argument, fmt::format("{}:{}: the first line must be the header: not an rdmalab record", path, lineno));
  try {
    if (type == "header") {
      if (j.value("format", "") != "rdmalab-record")
        return Status(Errc::invalid_argument, fmt::format("{}:{}: not an rdmalab record", path, lineno));
      r.scenario = j.value("scenario", "");
      r.backend = j.value("backend", "");
      r.ranks = j.value("ranks", 0);
      r.interval_s = j.value("interval_s", 0.0);
      header = true;
    } else if (type == "topology") {
      r.topology = {};
      for (const auto& n : j.at("nodes")) {
        TopoNode tn;
        tn.name = n.at("name");
        tn.kind = n.at("kind");
        tn.rank = n.value("rank", -1);
        tn.tier = n.value("tier", 0);
        tn.group = n.value("group", -1);
        tn.gpus = n.value("gpus", 0);
        tn.nics = n.value("nics", 0);
        tn.pcie_switches = n.value("pcie_switches", 0);
        tn.sockets = n.value("sockets", 0);
        tn.gpu_switch = n.value("gpu_switch", std::vector<int>{});
        tn.nic_switch = n.value("nic_switch", std::vector<int>{});
        tn.switch_socket = n.value("switch_socket", std::vector<int>{});
        tn.gpu_nic = n.value("gpu_nic", std::vector<int>{});
        // Indices must fit the counts (the dashboard draws with them).
        auto fits = [](const std::vector<int>& v, std::size_t size, int limit) {
          if (!v.empty() && v.size() != size) return false;
          for (int x : v)
            if (x < 0 || x >= limit) return false;
          return true;
        };
        if (!fits(tn.gpu_switch, static_cast<std::size_t>(tn.gpus), tn.pcie_switches) ||
            !fits(tn.nic_switch, static_cast<std::size_t>(tn.nics), tn.pcie_switches) ||
            !fits(tn.switch_socket, static_cast<std::size_t>(tn.pcie_switches), tn.sockets) ||
            !fits(tn.gpu_nic, static_cast<std::size_t>(tn.gpus), tn.nics))
          return Status(Errc::invalid_argument, fmt::format("{}:{}: node {}: its placement lists do not fit its GPU, NIC, switch and socket counts",
                                                            path, lineno, tn.name));
        r.topology.nodes.push_back(std::move(tn));
      }
      const int nn = static_cast<int>(r.topology.nodes.size());
      for (const auto& l : j.at("links")) {
        TopoLink tl{l.at("name"), l.at("bandwidth_Bps"), l.at("latency_s"), l.value("ends", std::vector<int>{})};
        for (int e : tl.ends)
          if (e < 0 || e >= nn)
            return Status(Errc::invalid_argument, fmt::format("{}:{}: link {} ends at node {}, but there are {} nodes", path, lineno, tl.name, e, nn));
        r.topology.links.push_back(std::move(tl));
      }
    } else if (type == "sample") {
      Sample s;
      s.t = j.at("t");
      const int nl = static_cast<int>(r.topology.links.size());
      for (const auto& u : j.at("link_util")) {
        int i = u.at(0).get<int>();
        if (i < 0 || i >= nl)
          return Status(Errc::invalid_argument, fmt::format("{}:{}: sample names link {}, but the topology has {} links", path, lineno, i, nl));
        s.link_util.emplace_back(i, u.at(1).get<double>());
      }
      s.rank_tx_Bps = j.at("rank_tx_Bps").get<std::vector<double>>();
      s.flows = j.value("flows", std::vector<int>{});
      s.rank_cpu = j.value("rank_cpu", std::vector<double>{});
      if (j.contains("port"))
        for (const auto& [name, rate] : j.at("port").items()) s.port.emplace_back(name, rate.get<double>());
      if (j.contains("gpu"))
        for (const auto& g : j.at("gpu"))
          s.gpu.push_back({g.at("index").get<int>(), g.at("util").get<double>(), g.at("mem_used").get<std::uint64_t>(), g.at("mem_total").get<std::uint64_t>()});
      for (int f : s.flows)
        if (f < 0 || f >= static_cast<int>(r.routes.size()))
          return Status(Errc::invalid_argument,
                        fmt::format("{}:{}: sample names route {}, but {} routes came before it", path, lineno, f, r.routes.size()));
      r.samples.push_back(std::move(s));
    } else if (type == "route") {
      Route rt{j.at("src").get<int>(), j.at("dst").get<int>(), j.at("links").get<std::vector<int>>()};
      const int nl = static_cast<int>(r.topology.links.size());
      for (int l : rt.links)
        if (l < 0 || l >= nl)
          return Status(Errc::invalid_argument, fmt::format("{}:{}: route crosses link {}, but the topology has {} links", path, lineno, l, nl));
      r.routes.push_back(std::move(rt));
    } else if (type == "monitor") {
      r.monitor = {j.value("port", ""), j.value("counters", ""), j.value("gpu", "")};
    } else if (type == "rows") {
      r.rows = rows_from_json(j.at("rows").dump());
    } else if (type == "end") {
      r.status = j.value("status", "");
    }
  } catch (const json::exception& e) {
    return Status(Errc::invalid_argument, fmt::format("{}:{}: malformed {} line: {}", path, lineno, type, e.what()));
  }
  return Status::ok();
}

}  // namespace

Result<int> RecordFollower::poll() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return 0;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  if (size < offset_) return Status(Errc::invalid_argument, fmt::format("{}: the record got shorter while being read", path_));
  if (size == offset_) return 0;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(size - offset_, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<std::size_t>(in.gcount()));
  offset_ += chunk.size();
  partial_ += chunk;
  int lines = 0;
  std::size_t start = 0;
  for (std::size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    ++lineno_;
    std::string line = partial_.substr(start, nl - start);
    if (line.empty()) continue;
    Status st = apply_line(rec_, header_, line, path_, lineno_);
    if (!st) {
      partial_.erase(0, nl + 1);
      return st;
    }
    ++lines;
  }
  partial_.erase(0, start);
  return lines;
}

Result<Record> read_record(const std::string& path) {
  {
    std::ifstream probe(path);
    if (!probe) return Status(Errc::io, fmt::format("{}: cannot open the record", path));
  }
  RecordFollower f(path);
  RDMALAB_TRY(f.poll().status());
  if (!f.has_header()) return Status(Errc::invalid_argument, fmt::format("{}: no header line: not an rdmalab record", path));
  return f.record();
}

std::string RunFile::resolved(const std::string& key) const {
  for (const auto& k : info.resolved)
    if (k.key == key) return k.value;
  return "";
}

Result<RunFile> read_run(const std::string& path) {
  RunFile f;
  f.path = path;
  std::ifstream in(path);
  if (!in) return Status(Errc::io, fmt::format("{}: cannot open", path));
  std::string first;
  std::getline(in, first);
  json j = json::parse(first, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.value("type", "") == "header") {
    RDMALAB_ASSIGN(Record rec, read_record(path));
    f.info.backend = rec.backend.empty() && !rec.rows.empty() ? rec.rows.front().backend : rec.backend;
    f.info.status = rec.status.empty() ? "did not finish (the record has no end line)" : rec.status;
    f.rows = std::move(rec.rows);
    return f;
  }
  in.clear();
  in.seekg(0);
  json whole = json::parse(in, nullptr, false);
  if (whole.is_discarded() || !whole.is_object() || !whole.contains("results") || !whole["results"].is_array())
    return Status(Errc::invalid_argument,
                  fmt::format("{}: neither a record (rdmalab run --record) nor results (rdmalab run --json): no \"results\" array", path));
  try {
    f.rows = rows_from_json(whole["results"].dump());
  } catch (const json::exception& e) {
    return Status(Errc::invalid_argument, fmt::format("{}: malformed rows: {}", path, e.what()));
  }
  f.has_info = true;
  f.info.scenario = whole.value("scenario", "");
  f.info.name = whole.value("name", "");
  f.info.backend = whole.value("backend", "");
  f.info.status = whole.value("status", "ok");
  f.info.error = whole.value("error", "");
  if (whole.contains("resolved") && whole["resolved"].is_object())
    for (const auto& [k, v] : whole["resolved"].items())
      if (v.is_object()) f.info.resolved.push_back({k, v.value("value", ""), v.value("from", "")});
  if (f.info.backend.empty() && !f.rows.empty()) f.info.backend = f.rows.front().backend;
  return f;
}

Result<std::vector<ResultRow>> read_rows(const std::string& path) {
  RDMALAB_ASSIGN(RunFile f, read_run(path));
  return std::move(f.rows);
}

}  // namespace rdmalab
