// The record's samples on the model (--record): every interval of simulated time, each link's
// utilisation, each rank's throughput (finished transfers and the part of those on the wire that
// has crossed) and the routes in use.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "simgrid/engine/objects.h"
#include "simgrid/engine/progress.h"
#include "simgrid/engine/record.h"

namespace rdmalab::sim {

void sample_record(World& w, RecordWriter& rec, const Topology& topo, double interval) {
  std::vector<sg4::Link*> links;
  std::unordered_map<std::string, int> link_index;
  for (const auto& l : topo.links) {
    links.push_back(sg4::Link::by_name(l.name));
    link_index.emplace(l.name, static_cast<int>(link_index.size()));
  }
  std::vector<double> last(w.nics.size(), 0);
  // Routes of the transfers seen so far, by their endpoints; numbered as written.
  std::map<std::pair<sg4::Host*, sg4::Host*>, int> routes;
  std::unordered_map<sg4::Host*, int> rank_of;
  for (std::size_t r = 0; r < w.eps.size(); ++r)
    for (sg4::Host* h : {w.eps[r].gpu, w.eps[r].staged, w.eps[r].host}) rank_of[h] = static_cast<int>(r);
  while (true) {
    sg4::this_actor::sleep_for(interval);
    Sample s;
    s.t = sg4::Engine::get_clock();
    for (std::size_t i = 0; i < links.size(); ++i) {
      double used = links[i]->get_usage();
      if (used > 0) s.link_util.emplace_back(static_cast<int>(i), used / links[i]->get_bandwidth());
    }
    // Bytes sent = finished transfers + the part of each transfer on the wire that has
    // crossed (requests sharing a link all progress at once and finish together).
    std::vector<std::pair<sg4::CommPtr, double>> wire;  // (transfer, its size on the wire)
    std::vector<double> ratio;                           // payload bytes per wire byte
    std::vector<std::size_t> owner;
    for (std::size_t r = 0; r < w.nics.size(); ++r)
      for (SimgridQp* qp : w.nics[r]->qps)
        for (const auto& op : qp->inflight) {
          // The payload's transfer: a write's or send's request (phase 0), a read's response
          // (phase 1), which the responder sends back to the requester.
          const bool read = op->wr.opcode == SendOpcode::rdma_read;
          if (!op->comm || op->done || op->len == 0 || op->phase != (read ? 1 : 0)) continue;
          const SimgridQp* peer = read ? qp->peer() : nullptr;
          if (read && !peer) continue;
          {
            sg4::Host* from = op->src;  // this phase's ends: for a read's response, responder to requester
            sg4::Host* to = op->dst;
            auto key = std::make_pair(from, to);
            auto rit = routes.find(key);
            if (rit == routes.end()) {
              std::vector<sg4::Link*> path;
              double lat = 0;
              from->route_to(to, path, &lat);
              Route rt{rank_of[from], rank_of[to], {}};
              for (sg4::Link* l : path) {
                auto li = link_index.find(l->get_name());
                if (li != link_index.end()) rt.links.push_back(li->second);
              }
              rec.route(rt);
              rit = routes.emplace(key, static_cast<int>(routes.size())).first;
            }
            if (s.flows.empty() || s.flows.back() != rit->second) s.flows.push_back(rit->second);
            const double on_wire = std::max(1.0, phase_wire_bytes(w, *op));
            wire.emplace_back(op->comm, on_wire);
            ratio.push_back(static_cast<double>(op->len) / on_wire);
            owner.push_back(read ? static_cast<std::size_t>(peer->rank) : r);
          }
        }
    std::vector<double> sent(w.nics.size());
    for (std::size_t r = 0; r < w.nics.size(); ++r) sent[r] = static_cast<double>(w.nics[r]->tx_bytes);
    for (std::size_t i = 0; i < wire.size(); ++i) {
      const sg4::CommPtr& c = wire[i].first;
      if (c->get_state() != sg4::Activity::State::STARTED) continue;
      const double size = wire[i].second;
      sent[owner[i]] += std::max(0.0, size - c->get_remaining()) * ratio[i];
    }
    for (std::size_t r = 0; r < w.nics.size(); ++r) {
      s.rank_tx_Bps.push_back((sent[r] - last[r]) / interval);
      last[r] = sent[r];
    }
    std::sort(s.flows.begin(), s.flows.end());
    s.flows.erase(std::unique(s.flows.begin(), s.flows.end()), s.flows.end());
    rec.sample(s);
  }
}

}  // namespace rdmalab::sim
