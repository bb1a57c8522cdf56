// CLUSTER and READONLY / READWRITE / ASKING: refused while cluster-enabled is no; with it,
// CLUSTER KEYSLOT is Redis's CRC16 slot of the key or its hash tag.
#include <catch2/catch.hpp>
#include <string>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

constexpr std::string_view kDisabled = "-ERR This instance has cluster support disabled\r\n";

TEST_CASE("Cluster commands are refused when cluster support is disabled", "[cluster]") {
  TestServer ts;
  CHECK(ts.Run({"CLUSTER", "INFO"}) == kDisabled);
  CHECK(ts.Run({"CLUSTER", "KEYSLOT", "k"}) == kDisabled);
  CHECK(ts.Run({"READONLY"}) == kDisabled);
  CHECK(ts.Run({"READWRITE"}) == kDisabled);
  CHECK(ts.Run({"ASKING"}) == kDisabled);
  CHECK_FALSE(ts.client().cluster_readonly);
  CHECK(ts.Run({"CLUSTER", "NOPE"}) == "-ERR unknown subcommand 'NOPE'. Try CLUSTER HELP.\r\n");
}

TEST_CASE("CLUSTER KEYSLOT hashes the key or its hash tag", "[cluster]") {
  TestServer ts([](server::Config& cfg) { cfg.cluster_enabled = true; });
  CHECK(ts.Run({"CLUSTER", "KEYSLOT", "somekey"}) == ":11058\r\n");
  CHECK(ts.Run({"CLUSTER", "KEYSLOT", "foo{hash_tag}"}) == ":2515\r\n");
  CHECK(ts.Run({"CLUSTER", "KEYSLOT", "hash_tag"}) == ":2515\r\n");
  CHECK(ts.Run({"CLUSTER", "KEYSLOT"}) ==
        "-ERR wrong number of arguments for 'cluster|keyslot' command\r\n");
  SECTION("READONLY and READWRITE switch the client's flag") {
    CHECK(ts.Run({"READONLY"}) == "+OK\r\n");
    CHECK(ts.client().cluster_readonly);
    CHECK(ts.Run({"READWRITE"}) == "+OK\r\n");
    CHECK_FALSE(ts.client().cluster_readonly);
  }
  SECTION("SELECT other than 0 is refused") {
    CHECK(ts.Run({"SELECT", "1"}) == "-ERR SELECT is not allowed in cluster mode\r\n");
    CHECK(ts.Run({"SELECT", "0"}) == "+OK\r\n");
  }
}

}  // namespace
}  // namespace cuckood::test
