// Range scans of one hash slot (Db::CountKeysInSlot / KeysInSlot, storage/keyspace.cc): the
// slot is the second field of every metadata key, so a slot is one contiguous key range.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;

TEST_CASE("KeysInSlot lists the live keys of one slot and one namespace only", "[keyspace]") {
  TestDb t;
  Db& db = t.db();
  std::map<uint16_t, std::vector<std::string>> by_slot;
  for (int i = 0; i < 200; ++i) {
    const std::string k = "key:" + std::to_string(i);
    REQUIRE(db.SetString(0, k, "v", 0, false).ok());
    by_slot[KeySlot(k)].push_back(k);
  }
  // Hash tags put these in the slot of "tag" (and in another namespace, invisible to ns 0).
  const uint16_t tag_slot = KeySlot("tag");
  REQUIRE(db.CfReserve(kAlone, 0, "{tag}.a", Reserve(100), CfSettings()).ok());
  REQUIRE(db.SetString(0, "{tag}.b", "v", 0, false).ok());
  REQUIRE(db.SetString(0, "{tag}.gone", "v", NowMs() - 5, false).ok());
  REQUIRE(db.SetString(1, "{tag}.other-db", "v", 0, false).ok());
  by_slot[tag_slot].push_back("{tag}.a");
  by_slot[tag_slot].push_back("{tag}.b");

  uint64_t total = 0;
  for (auto& [slot, keys] : by_slot) {
    std::sort(keys.begin(), keys.end());
    auto listed = db.KeysInSlot(0, slot, 1000);
    REQUIRE(listed.ok());
    CHECK(*listed == keys);
    CHECK(*db.CountKeysInSlot(0, slot) == keys.size());
    total += keys.size();
  }
  CHECK(total == *db.DbSize(0));
  CHECK(*db.CountKeysInSlot(1, tag_slot) == 1);

  SECTION("limit bounds the listing; 0 lists nothing") {
    CHECK(db.KeysInSlot(0, tag_slot, 1)->size() == 1);
    CHECK(db.KeysInSlot(0, tag_slot, 0)->empty());
  }
  SECTION("the first and last slots are ranges too") {
    REQUIRE(db.SetString(0, "", "v", 0, false).ok());  // slot 0
    CHECK(*db.KeysInSlot(0, 0, 10) == std::vector<std::string>{""});
    CHECK(*db.CountKeysInSlot(0, 16383) == by_slot[16383].size());
  }
}
