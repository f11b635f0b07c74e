// The SimGrid backend: every rank is an s4u actor on a host of a modelled cluster (engine/world.h
// tells how a request becomes simulated time).
//
// SimGrid allows one engine per process and no reconfiguration, so every launch runs in a
// forked child process; what the ranks' code leaves behind comes back through a pipe
// (LaunchSpec::export_state / import_state).
#include "simgrid/simgrid_backend.h"

#include <fmt/format.h>
#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unistd.h>
#include <unordered_set>

#include "common/child_process.h"
#include "rdmalab/calibration.h"
#include "rdmalab/progress.h"
#include "rdmalab/record.h"
#include "rdmalab/run.h"
#include "rdmalab/scenario.h"
#include "simgrid/engine/objects.h"
#include "simgrid/engine/progress.h"
#include "simgrid/platform.h"
#include "simgrid/engine/record.h"

namespace rdmalab::sim {
namespace {

Status simulate(const LaunchSpec& spec, const RankMain& main, const Scenario& sc) {
  std::vector<std::string> args_s = engine_args("rdmalab");
  std::vector<char*> args;
  for (auto& a : args_s) args.push_back(a.data());
  args.push_back(nullptr);
  int argc = static_cast<int>(args_s.size());
  sg4::Engine engine(&argc, args.data());

  World w;
  w.sc = &sc;
  w.model = read_model(sc);
  w.model.ranks = spec.ranks;
  w.eps = build_platform(sc, w.model);
  {
    // The job's node j runs on fabric node placement[j]: its ranks take that node's endpoints.
    RDMALAB_ASSIGN(w.placement, node_placement(sc));
    const std::size_t per = w.placement.empty() ? 1 : w.eps.size() / w.placement.size();
    std::vector<RankEndpoints> placed(w.eps.size());
    for (std::size_t j = 0; j < w.placement.size(); ++j)
      for (std::size_t g = 0; g < per; ++g) placed[j * per + g] = w.eps[static_cast<std::size_t>(w.placement[j]) * per + g];
    w.eps = std::move(placed);
  }
  for (const auto& e : w.eps) {
    if (!e.gpu) return Status(Errc::internal, "the platform has fewer hosts than ranks");
    w.hosts.push_back(e.gpu);
  }
  RDMALAB_ASSIGN(const std::optional<Degrade> degrade, read_degrade(sc));
  if (degrade) {
    // The what-if's links keep a fraction of their bandwidth, from the start (before the record's
    // picture is taken, so it shows them degraded) or from a simulated time.
    const Topology topo = describe_topology(w);
    std::vector<sg4::Link*> links;
    for (const auto& sel : degrade->selectors) {
      const auto idx = select_links(topo, sel);
      if (idx.empty()) return Status(Errc::invalid_argument, fmt::format("fabric.degrade.links: '{}' names no link of this platform", sel));
      for (std::size_t i : idx)
        if (sg4::Link* l = sg4::Link::by_name_or_null(topo.links[i].name); l && std::find(links.begin(), links.end(), l) == links.end())
          links.push_back(l);
    }
    if (degrade->factor <= 0) {
      // Down (from the start: read_degrade): its bandwidth stays in the picture; no packet crosses
      // it (launch_phase).
      w.down_links.assign(links.begin(), links.end());
      links.clear();
    }
    auto apply = [links, f = degrade->factor] {
      for (sg4::Link* l : links) l->set_bandwidth(l->get_bandwidth() * f);
    };
    if (degrade->at_s <= 0)
      apply();
    else
      sg4::Actor::create("degrade", w.hosts[0], [apply, at = degrade->at_s] {
        sg4::this_actor::sleep_until(at);
        apply();
      })->daemonize();
  }
  w.staged = gpu_staged(sc, w.model);
  w.one_endpoint = std::all_of(w.eps.begin(), w.eps.end(), [](const RankEndpoints& e) { return e.gpu == e.host && e.staged == e.host; });
  if (const std::string cal = calibration_path(sc); !cal.empty()) {
    RDMALAB_ASSIGN(Calibration c, load_calibration(cal));
    auto* net = sg4::Engine::get_instance()->get_netzone_root()->get_network_model();
    // The factors depend on the message size only; SimGrid passes the transfer's bytes.
    if (!c.bandwidth.empty())
      net->set_bw_factor_cb([steps = c.bandwidth](double size, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                                                  const std::unordered_set<sg4::NetZone*>&) { return Calibration::factor(steps, size); });
    if (!c.latency.empty())
      net->set_lat_factor_cb([steps = c.latency](double size, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                                                 const std::unordered_set<sg4::NetZone*>&) { return Calibration::factor(steps, size); });
  }
  w.slots.resize(static_cast<std::size_t>(spec.ranks));
  for (int r = 0; r < spec.ranks; ++r) {
    auto nic = std::make_unique<Nic>();
    nic->rank = r;
    // The same seed, the same draws; each (seed, rank) starts at its own place of the stream.
    nic->jitter_state = jitter_seed(spec.scenario ? static_cast<std::uint64_t>(spec.scenario->get_int("seed")) : 1, r);
    nic->inbox = sg4::Mailbox::by_name(fmt::format("inbox-{}", r));
    w.nics.push_back(std::move(nic));
  }
  RecordWriter rec;
  if (!spec.record_path.empty()) {
    RDMALAB_TRY(rec.open(spec.record_path, false));
    rec.header(sc.file, "simgrid", spec.ranks, spec.record_interval_s);
    Topology topo = describe_topology(w);
    rec.topology(topo);
    w.keep_endpoints = true;
    sg4::Actor::create("sampler", w.hosts[0], [&w, &rec, topo, interval = spec.record_interval_s] { sample_record(w, rec, topo, interval); })
        ->daemonize();
  }
  if (spec.progress) {
    // On a terminal, one line rewritten about once a second of wall time; into a pipe (--progress),
    // a line every 2 s. With the share of the workload's bytes sent (progress.h), an ETA.
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    auto wall0 = std::chrono::steady_clock::now();
    auto last = wall0;
    sg4::Engine::on_time_advance_cb([&w, wall0, last, tty](double) mutable {
      auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::seconds(tty ? 1 : 2)) return;
      last = now;
      const double wall = std::chrono::duration<double>(now - wall0).count();
      const double f = work_meter().fraction();
      std::string done;
      if (f > 0) {
        const double eta = wall * (1 - f) / f;
        done = fmt::format("{:.0f}% of the work, ETA {:.0f} s, ", 100 * f, eta);
      }
      std::fprintf(stderr, "%s[simgrid] %s%.0f s elapsed, simulated %.6f s, %llu transfers, %.0f transfers/s%s", tty ? "\r" : "", done.c_str(), wall,
                   sg4::Engine::get_clock(), static_cast<unsigned long long>(w.transfers), static_cast<double>(w.transfers) / wall,
                   tty ? "   " : "\n");
      std::fflush(stderr);
    });
  }
  std::vector<Status> results(static_cast<std::size_t>(spec.ranks), Status(Errc::internal, "did not finish"));
  std::vector<bool> finished(static_cast<std::size_t>(spec.ranks), false);
  for (int r = 0; r < spec.ranks; ++r) {
    sg4::Actor::create(fmt::format("rank-{}", r), w.hosts[static_cast<std::size_t>(r)], [&, r] {
      RDMALAB_SIM_COLOUR_STACK(r);  // platform.h
      SimgridDevice dev(w, r);
      SimgridBootstrap boot(w, r, spec.ranks);
      SimgridRuntime rt(w, r);
      NodeShape shape = w.model.shape();
      if (spec.scenario) fill_tuning_facts(*spec.scenario, shape);
      RankEnv env{r, spec.ranks, boot, rt, dev, host_memory(), shape};
      Status st;
      try {
        st = main(env);
      } catch (const simgrid::Exception& e) {
        st = Status(Errc::internal, fmt::format("SimGrid: {}", e.what()));
      } catch (const std::exception& e) {
        st = Status(Errc::internal, fmt::format("uncaught exception: {}", e.what()));
      }
      if (!st) w.abort(fmt::format("rank {} stopped: {}", r, st.message()));
      // Nothing new comes to its inbox; a transfer already matched there is seen to its end (an
      // actor's death would cancel it under its sender).
      Nic& me = *w.nics[static_cast<std::size_t>(r)];
      me.exiting = true;
      w.start_batch();  // cancelling is a simcall: what was made starts first
      std::vector<sg4::CommPtr> idle;
      for (auto& g : me.gets)
        if (!g.op) idle.push_back(g.get);
      me.gets.remove_if([](const Nic::InboxRecv& g) { return !g.op; });
      me.unmatched = 0;
      for (auto& c : idle) c->cancel();
      (void)progress(w, r, std::numeric_limits<double>::infinity(), [&] { return me.gets.empty(); });
      results[static_cast<std::size_t>(r)] = st;
      finished[static_cast<std::size_t>(r)] = true;
      if (--w.ranks_running == 0) w.keeper.fire();
    });
  }
  w.ranks_running = spec.ranks;
  sg4::Actor::create("timekeeper", w.hosts[0], [&w] { keep_time(w); });
  engine.run();
  if (spec.progress && w.transfers > 0) std::fprintf(stderr, "\n");
  if (!spec.record_path.empty()) RDMALAB_TRY(rec.close());
  std::vector<int> stuck;
  for (int r = 0; r < spec.ranks; ++r)
    if (!finished[static_cast<std::size_t>(r)]) stuck.push_back(r);
  if (!stuck.empty()) {
    std::string list;
    for (std::size_t i = 0; i < stuck.size() && i < 8; ++i) list += (i ? ", " : "") + std::to_string(stuck[i]);
    return Status(Errc::internal, fmt::format("the simulation deadlocked: {} rank(s) still waiting ({}{}) with nothing left in flight",
                                              stuck.size(), list, stuck.size() > 8 ? ", …" : ""));
  }
  return first_failure(results);
}

class SimgridBackend final : public Backend {
 public:
  std::string name() const override { return "simgrid"; }
  std::string description() const override { return "a SimGrid model of the scenario's cluster network (no hardware needed)"; }
  Availability availability() const override { return {true, ""}; }
  int default_preference() const override { return 2; }  // the model: no hardware needed, the default
  Capabilities capabilities() const override { return sim_caps(); }
  void add_keys(Schema& schema) const override { add_fabric_keys(schema); }
  Status check(const Scenario& sc) const override { return check_fabric(sc); }
  bool can_record() const override { return true; }
  bool can_cancel() const override { return true; }

  Status launch(const LaunchSpec& spec, const RankMain& main) override {
    Scenario defaults;
    const Scenario* sc = spec.scenario;
    if (!sc) {
      // Tests launch without a scenario: a two-level default (star, 100Gbps, 1us, alpha_beta).
      Schema schema = core_schema();
      add_fabric_keys(schema);
      // Only the fabric keys matter here; give the name enumerations something to check against.
      schema.set_allowed("backend", {"loopback", "simgrid"});
      schema.set_allowed("workload.type", {"write_bw"});
      auto parsed = parse_scenario("fabric: { model: alpha_beta }\n", "(default fabric)", {fmt::format("fabric.nodes={}", spec.ranks)}, schema);
      if (!parsed) return parsed.status();
      defaults = std::move(parsed).value();
      sc = &defaults;
    }
    if (scenario_ranks(*sc) != spec.ranks)
      return Status(Errc::invalid_argument, fmt::format("launch of {} ranks on a fabric of {} ranks", spec.ranks, scenario_ranks(*sc)));
    auto child = fork_child([&] {
      ChildOutcome out;
      out.status = simulate(spec, main, *sc);
      out.state = spec.export_state ? spec.export_state() : std::string();
      return out;
    });
    if (!child) return child.status();
    ChildOutcome out = collect_child(child->first, child->second, "the simulation process", spec.cancel);
    if (spec.import_state && !out.state.empty()) spec.import_state(out.state);
    return out.status;
  }
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<SimgridBackend>(); }

}  // namespace rdmalab::sim
