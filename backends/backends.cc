#include "backends.h"

#include "loopback/loopback_backend.h"
#ifdef RDMALAB_HAVE_SIMGRID
#include "simgrid/simgrid_backend.h"
#endif
#ifdef RDMALAB_HAVE_VERBS
#include "verbs/mpi_bootstrap.h"
#include "verbs/verbs_backend.h"
#endif

namespace rdmalab {
namespace {

// A backend left out of this build: listed, so `rdmalab list` can say why it is not usable.
class NotBuilt final : public Backend {
 public:
  NotBuilt(std::string name, std::string why) : name_(std::move(name)), why_(std::move(why)) {}
  std::string name() const override { return name_; }
  std::string description() const override { return "not built"; }
  Availability availability() const override { return {false, "not built: " + why_}; }
  Capabilities capabilities() const override { return {}; }
  Status launch(const LaunchSpec&, const RankMain&) override {
    return Status(Errc::not_supported, name_ + " was not built: " + why_);
  }

 private:
  std::string name_, why_;
};

}  // namespace

const BackendRegistry& all_backends() {
  static const BackendRegistry reg = [] {
    BackendRegistry r;
    r.add("loopback", [] { return loopback::make_backend(); });
#ifdef RDMALAB_HAVE_SIMGRID
    r.add("simgrid", [] { return sim::make_backend(); });
#else
    r.add("simgrid", [] { return std::unique_ptr<Backend>(new NotBuilt("simgrid", RDMALAB_SIMGRID_WHY)); });
#endif
#ifdef RDMALAB_HAVE_VERBS
    r.add("verbs", [] { return verbs::make_backend(); });
#else
    r.add("verbs", [] { return std::unique_ptr<Backend>(new NotBuilt("verbs", RDMALAB_VERBS_WHY)); });
#endif
    return r;
  }();
  return reg;
}

Result<std::unique_ptr<Bootstrap>> mpi_bootstrap() {
#ifdef RDMALAB_HAVE_VERBS
  RDMALAB_ASSIGN(auto b, verbs::MpiBootstrap::init());
  return std::unique_ptr<Bootstrap>(std::move(b));
#else
  return Status(Errc::not_supported, "this build has no MPI library (the verbs backend was not built: " RDMALAB_VERBS_WHY ")");
#endif
}

}  // namespace rdmalab
