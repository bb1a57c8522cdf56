#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "server/util.h"

namespace cuckood::server {
namespace {

using storage::Code;
using storage::Reason;
using storage::Status;

// The reply texts as RedisBloom 2.8 and Redis 7 send them (tests/goldens/*.jsonl and
// redisbloom-cf-reference.md), written out here rather than taken from the constants.
const std::vector<std::pair<Status, std::string>>& ReasonCases() {
  static const std::vector<std::pair<Status, std::string>> cases = {
      {Status(Code::kExists, Reason::kFilterExists), "ERR item exists"},
      {Status(Code::kNotFound, Reason::kFilterNotFound), "ERR not found"},
      {Status(Code::kNotFound, Reason::kDelFilterNotFound), "Not found"},
      {Status(Code::kNotFound, Reason::kCompactFilterNotFound), "Cuckoo filter was not found"},
      {Status(Code::kInvalid, Reason::kCreateTooLarge), "ERR Insufficient memory to create filter"},
      {Status(Code::kInvalid, Reason::kBadHeader), "Invalid header"},
      {Status(Code::kInvalid, Reason::kCreateFailed), "Couldn't create filter!"},
      {Status(Code::kInvalid, Reason::kBadChunk), "Couldn't load chunk!"},
      {Status(Code::kInvalid, Reason::kBadDumpFormat), "ERR Bad data format"},
      {Status(Code::kInvalid, Reason::kSameObject),
       "ERR source and destination objects are the same"},
      {Status(Code::kNotFound, Reason::kKeyNotFound), "ERR no such key"},
  };
  return cases;
}

TEST_CASE("ErrorText gives every storage reason its exact reply text", "[errors]") {
  for (const auto& [status, text] : ReasonCases()) {
    INFO("reason " << static_cast<int>(status.reason()));
    CHECK(ErrorText(status) == text);
  }
}

TEST_CASE("Every reason but kNone has a text, and the cases cover them all", "[errors]") {
  CHECK(ReasonText(Reason::kNone).empty());
  std::vector<bool> covered(static_cast<size_t>(Reason::kKeyNotFound) + 1, false);
  for (const auto& [status, text] : ReasonCases()) {
    covered[static_cast<size_t>(status.reason())] = true;
  }
  for (size_t r = 1; r < covered.size(); ++r) {
    INFO("reason " << r);
    CHECK(covered[r]);
    CHECK_FALSE(ReasonText(static_cast<Reason>(r)).empty());
  }
}

TEST_CASE("ErrorText without a reason follows the code", "[errors]") {
  SECTION("kWrongType is Redis's WRONGTYPE text") {
    CHECK(ErrorText(Status(Code::kWrongType)) ==
          "WRONGTYPE Operation against a key holding the wrong kind of value");
  }
  SECTION("I/O, busy and corruption are ERR and the diagnostic") {
    CHECK(ErrorText(Status(Code::kIoError, "storage error: disk")) == "ERR storage error: disk");
    CHECK(ErrorText(Status(Code::kBusy, "storage is busy")) == "ERR storage is busy");
    CHECK(ErrorText(Status(Code::kCorruption, "corrupt page")) == "ERR corrupt page");
  }
  SECTION("a reasonless kInvalid made outside storage is its message") {
    CHECK(ErrorText(Status(Code::kInvalid, "ERR Invalid cluster version")) ==
          "ERR Invalid cluster version");
  }
  SECTION("nothing to say is an internal error") {
    CHECK(ErrorText(Status::Ok()) == "ERR internal error");
    CHECK(ErrorText(Status(Code::kNotFound)) == "ERR internal error");
  }
}

TEST_CASE("ReplyStatusError writes the text as one RESP error", "[errors]") {
  std::string out;
  resp::Writer w(&out, 2);
  ReplyStatusError(w, Status(Code::kNotFound, Reason::kDelFilterNotFound));
  CHECK(out == "-Not found\r\n");
}

}  // namespace
}  // namespace cuckood::server
