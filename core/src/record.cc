#include "rdmalab/record.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace rdmalab {

using json = nlohmann::json;

Status RecordWriter::open(const std::string& path, bool append) {
  path_ = path;
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
  for (const auto& n : t.nodes) nodes.push_back({{"name", n.name}, {"kind", n.kind}, {"rank", n.rank}});
  for (const auto& l : t.links)
    links.push_back({{"name", l.name}, {"bandwidth_Bps", l.bandwidth_Bps}, {"latency_s", l.latency_s}, {"ends", l.ends}});
  out_ << json{{"type", "topology"}, {"nodes", nodes}, {"links", links}}.dump() << '\n';
}

void RecordWriter::sample(const Sample& s) {
  json util = json::array();
  for (const auto& [i, u] : s.link_util) util.push_back({i, u});
  out_ << json{{"type", "sample"}, {"t", s.t}, {"link_util", util}, {"rank_tx_Bps", s.rank_tx_Bps}}.dump() << '\n';
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

Result<Record> read_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(Errc::io, fmt::format("{}: cannot open the record", path));
  Record r;
  std::string line;
  int lineno = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("type"))
      return Status(Errc::invalid_argument, fmt::format("{}:{}: not a record line (expected a JSON object with \"type\")", path, lineno));
    const std::string type = j["type"].get<std::string>();
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
        for (const auto& n : j.at("nodes")) r.topology.nodes.push_back({n.at("name"), n.at("kind"), n.value("rank", -1)});
        for (const auto& l : j.at("links"))
          r.topology.links.push_back({l.at("name"), l.at("bandwidth_Bps"), l.at("latency_s"), l.value("ends", std::vector<int>{})});
      } else if (type == "sample") {
        Sample s;
        s.t = j.at("t");
        for (const auto& u : j.at("link_util")) s.link_util.emplace_back(u.at(0).get<int>(), u.at(1).get<double>());
        s.rank_tx_Bps = j.at("rank_tx_Bps").get<std::vector<double>>();
        r.samples.push_back(std::move(s));
      } else if (type == "rows") {
        r.rows = rows_from_json(j.at("rows").dump());
      } else if (type == "end") {
        r.status = j.value("status", "");
      }
    } catch (const json::exception& e) {
      return Status(Errc::invalid_argument, fmt::format("{}:{}: malformed {} line: {}", path, lineno, type, e.what()));
    }
  }
  if (!header) return Status(Errc::invalid_argument, fmt::format("{}: no header line: not an rdmalab record", path));
  return r;
}

}  // namespace rdmalab
