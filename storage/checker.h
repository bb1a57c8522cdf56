// Offline consistency checker (`cuckood --check --dir DIR`): walks a closed database read-only
// and reports every inconsistency between metadata and pages.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace cuckood::storage {

struct CheckReport {
  uint64_t keys = 0;
  uint64_t filters = 0;
  uint64_t pages = 0;
  uint64_t dead_pages = 0;  // pages of deleted/overwritten versions, awaiting compaction
  uint64_t errors = 0;
  bool ok() const { return errors == 0; }
};

// Checks: every metadata record decodes; versions are below the reserved high-water mark; every
// page of a live filter has the right length and a filter/page index inside the filter; for
// filters built by commands (not loaded from a header) the item count equals the number of
// non-empty slots. Writes one line per problem and a summary to out.
CheckReport CheckDatabase(const std::string& dir, std::ostream& out);

}  // namespace cuckood::storage
