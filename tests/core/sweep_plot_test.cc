// What a sweep's plots show (rdmalab/sweep_plot.h): the table read back from sweep.json, the
// lines, the categories, the units.
#include "rdmalab/sweep_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>
#include <fstream>

#include "rdmalab/files.h"

namespace rdmalab {
namespace {

// A collective row as a run gives it.
ResultRow collective_row(std::uint64_t bytes, double busbw, const char* placement) {
  ResultRow r;
  r.workload = "all_reduce";
  r.backend = "simgrid";
  r.bytes = bytes;
  r.iterations = 5;
  r.time_s = 1e-3;
  r.extra["busbw_gbps"] = busbw;
  r.extra["algbw_gbps"] = busbw / 2;
  r.notes["placement"] = placement;
  return r;
}

SweepFile written_and_read(const std::vector<SweepAxis>& axes, const std::vector<SweepResult>& results, bool zip = false) {
  // One file per test and process: ctest runs these tests side by side (they shared one name,
  // and one test read the other's sweep).
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto path = std::filesystem::temp_directory_path() /
                    (std::string("rdmalab-sweep-plot-") + test->name() + "-" + std::to_string(::getpid()) + ".json");
  EXPECT_TRUE(write_file_atomically(path.string(), sweep_json("s.yaml", "simgrid", zip, axes, results)));
  auto s = read_sweep(path.string());
  EXPECT_TRUE(s) << s.status().message();
  return *s;
}

TEST(SweepPlot, SizeLinesPerPointAndTheMeasureAgainstEachKey) {
  const std::vector<SweepAxis> axes{{"fabric.link.bandwidth", {"100Gbps", "400Gbps"}}, {"workload.algorithm", {"ring", "tree"}}};
  std::vector<SweepResult> results;
  for (int b = 0; b < 2; ++b)
    for (int a = 0; a < 2; ++a) {
      SweepResult r;
      r.point.values = {axes[0].values[b], axes[1].values[a]};
      r.status = "ok";
      const double peak = (b ? 40.0 : 10.0) * (a ? 0.5 : 1.0);
      for (std::uint64_t size : {1u << 20, 1u << 24}) {
        r.rows.push_back(collective_row(size, peak * (size == (1u << 20) ? 0.5 : 1.0), "out-of-place"));
        r.rows.push_back(collective_row(size, 999, "in-place"));  // left out: out-of-place rows are plotted
      }
      results.push_back(r);
    }
  results[3].status = "failed";  // 400Gbps tree: no values
  const SweepFile s = written_and_read(axes, results);
  auto plots = sweep_plots(s);
  ASSERT_TRUE(plots) << plots.status().message();
  ASSERT_EQ(plots->size(), 3u);
  const Plot& size = (*plots)[0];
  EXPECT_EQ(size.id, "busbw-vs-size");
  EXPECT_TRUE(size.x_is_size);
  EXPECT_EQ(size.y_title, "busbw (GB/s)");
  EXPECT_EQ(size.x_title, "message size (bytes)");
  ASSERT_EQ(size.lines.size(), 3u);  // the failed point has no line
  EXPECT_EQ(size.lines[2].name, "link.bandwidth=400Gbps, algorithm=ring");
  ASSERT_EQ(size.lines[2].x.size(), 2u);
  EXPECT_DOUBLE_EQ(size.lines[2].x[0], 20.0);
  EXPECT_DOUBLE_EQ(size.lines[2].y[0], 20.0);
  EXPECT_DOUBLE_EQ(size.lines[2].y[1], 40.0);

  const Plot& bw = (*plots)[1];
  EXPECT_EQ(bw.id, "busbw-vs-link.bandwidth");
  EXPECT_EQ(bw.title, "busbw vs fabric.link.bandwidth at 16 MiB");
  EXPECT_EQ(bw.x_categories, (std::vector<std::string>{"100Gbps", "400Gbps"}));
  ASSERT_EQ(bw.lines.size(), 2u);
  EXPECT_EQ(bw.lines[0].name, "algorithm=ring");
  EXPECT_EQ(bw.lines[0].x, (std::vector<double>{0, 1}));
  EXPECT_EQ(bw.lines[0].y, (std::vector<double>{10, 40}));
  EXPECT_EQ(bw.lines[1].y, (std::vector<double>{5}));  // tree at 400 Gb/s failed
  const Plot& alg = (*plots)[2];
  EXPECT_EQ(alg.id, "busbw-vs-algorithm");
  EXPECT_EQ(alg.lines[1].name, "link.bandwidth=400Gbps");

  // Another measure; one that is not a numeric column is refused naming those that are.
  PlotOptions o;
  o.measure = "algbw (GB/s)";
  auto alg_plots = sweep_plots(s, o);
  ASSERT_TRUE(alg_plots);
  EXPECT_EQ((*alg_plots)[0].id, "algbw-vs-size");
  o.measure = "redop";
  auto bad = sweep_plots(s, o);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("'busbw (GB/s)'"), std::string::npos) << bad.status().message();
}

TEST(SweepPlot, ZippedKeysGiveOnePlotAndNothingToPlotIsSaid) {
  const std::vector<SweepAxis> axes{{"fabric.nodes", {"2", "4", "8"}}, {"workload.size", {"1GiB", "1GiB", "1GiB"}}};
  std::vector<SweepResult> results;
  for (int i = 0; i < 3; ++i) {
    SweepResult r;
    r.point.values = {axes[0].values[i], "1GiB"};
    r.status = "ok";
    r.rows.push_back(collective_row(1u << 30, 300000.0 * (i + 1), "out-of-place"));
    results.push_back(r);
  }
  auto plots = sweep_plots(written_and_read(axes, results, true));
  ASSERT_TRUE(plots) << plots.status().message();
  ASSERT_EQ(plots->size(), 1u);  // one size per point: no size plot; zipped: against the first key only
  EXPECT_EQ((*plots)[0].y_title, "busbw (TB/s)");
  EXPECT_DOUBLE_EQ((*plots)[0].lines[0].y[2], 900.0);

  for (auto& r : results) r.status = "failed";
  auto none = sweep_plots(written_and_read(axes, results, true));
  ASSERT_FALSE(none);
  EXPECT_NE(none.status().message().find("nothing to plot"), std::string::npos) << none.status().message();
}

TEST(SweepPlot, ReadableUnitsAndSizeTicks) {
  EXPECT_EQ(readable_scale(400000, "Gb/s").unit, "Tb/s");
  EXPECT_DOUBLE_EQ(readable_scale(400000, "Gb/s").factor, 1e-3);
  EXPECT_EQ(readable_scale(0.5, "GB/s").unit, "MB/s");
  EXPECT_EQ(readable_scale(2500, "us").unit, "ms");
  EXPECT_EQ(readable_scale(25, "us").unit, "us");
  EXPECT_EQ(readable_scale(7, "samples/s").unit, "samples/s");
  EXPECT_EQ(size_tick_label(0), "1 B");
  EXPECT_EQ(size_tick_label(10), "1 KiB");
  EXPECT_EQ(size_tick_label(26), "64 MiB");
  EXPECT_EQ(size_tick_label(34), "16 GiB");
}

TEST(SweepPlot, AFileThatIsNotASweepIsRefusedSayingWhy) {
  const auto path = std::filesystem::temp_directory_path() / "rdmalab-not-a-sweep.json";
  ASSERT_TRUE(write_file_atomically(path.string(), "{\"results\": []}\n"));
  auto s = read_sweep(path.string());
  ASSERT_FALSE(s);
  EXPECT_NE(s.status().message().find("not a sweep table"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("\"axes\""), std::string::npos) << s.status().message();
  EXPECT_EQ(read_sweep("/nonexistent/sweep.json").status().code(), Errc::io);
}

}  // namespace
}  // namespace rdmalab
