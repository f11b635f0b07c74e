// rdmalab compare A B: two finished runs (results files or records) row by row (core/compare.h).
#include <fmt/format.h>

#include <filesystem>

#include "commands.h"
#include "rdmalab/compare.h"
#include "rdmalab/files.h"

namespace rdmalab {

namespace {

struct Args {
  std::string a, b, csv;
  std::vector<std::string> labels;
};

// Each side's name in the column headings: its backend, or (both the same) its file's name.
std::pair<std::string, std::string> labels_for(const Args& args, const RunFile& a, const RunFile& b) {
  if (args.labels.size() == 2) return {args.labels[0], args.labels[1]};
  std::string la = a.info.backend.empty() ? "A" : a.info.backend, lb = b.info.backend.empty() ? "B" : b.info.backend;
  if (la == lb) {
    la = std::filesystem::path(a.path).stem().string();
    lb = std::filesystem::path(b.path).stem().string();
    if (la == lb) {
      la = "A";
      lb = "B";
    }
  }
  return {la, lb};
}

}  // namespace

Command add_compare(CLI::App& app) {
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("compare", "two finished runs (--json results or --record files) row by row: A, B and B/A per column");
  sub->add_option("A", a->a, "the first run (e.g. the model's prediction)")->required();
  sub->add_option("B", a->b, "the second run (e.g. the measurement)")->required();
  sub->add_option("--labels", a->labels, "names for the two runs in the headings (default: their backends, else their file names)")->expected(2);
  sub->add_option("--csv", a->csv, "also write the table as CSV to this file");
  return {sub, [a]() {
            auto ra = read_run(a->a);
            auto rb = read_run(a->b);
            if (!ra || !rb) {
              print_problems((!ra ? ra.status() : rb.status()).message());
              return kExitUsage;
            }
            const auto [la, lb] = labels_for(*a, *ra, *rb);
            if (la == lb) {
              print_problems("--labels: the two labels must differ");
              return kExitUsage;
            }
            auto c = compare_runs(*ra, la, *rb, lb);
            if (!c) {
              print_problems(c.status().message());
              return kExitUsage;
            }
            fmt::print("# compare {} = {} ({} rows) with {} = {} ({} rows)\n", la, a->a, ra->rows.size(), lb, a->b, rb->rows.size());
            fmt::print("{}", comparison_text(*c));
            if (!a->csv.empty()) {
              if (Status st = write_file_atomically(a->csv, result_table_csv(c->table)); !st) {
                print_problems(st.message());
                return kExitRunFailed;
              }
            }
            return kExitOk;
          }};
}

}  // namespace rdmalab
