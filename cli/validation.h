// `rdmalab validation`: runs the validation cases (scenario files with a published figure in
// their header) and prints case, published, predicted and ratio. docs/validation.md.
#pragma once

#include <string>
#include <vector>

namespace rdmalab {

// `paths`: case files or folders of them. Exit status: 0 every case within its tolerance and the
// median |error| at most `median_limit` (a fraction); 1 otherwise; 2 a case that cannot be read.
int cmd_validation(const std::vector<std::string>& paths, const std::string& json_path, double median_limit);

}  // namespace rdmalab
