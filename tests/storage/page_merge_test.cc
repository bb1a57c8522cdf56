#include "storage/page_merge.h"

#include <catch2/catch.hpp>
#include <random>
#include <vector>

namespace cuckood::storage {
namespace {

// Runs the operator's full merge of operands over an optional base page.
bool Merge(const std::string* base, const std::vector<std::string>& ops, std::string* out) {
  auto op = NewPageMergeOperator();
  std::vector<rocksdb::Slice> slices(ops.begin(), ops.end());
  rocksdb::Slice key("k");
  rocksdb::Slice existing;
  if (base != nullptr) {
    existing = rocksdb::Slice(*base);
  }
  rocksdb::MergeOperator::MergeOperationInput in(key, base ? &existing : nullptr, slices, nullptr);
  rocksdb::Slice existing_operand;
  rocksdb::MergeOperator::MergeOperationOutput res(*out, existing_operand);
  return op->FullMergeV2(in, &res);
}

TEST_CASE("a page delta carries only the changed bytes and rebuilds the page") {
  std::string before(2048, '\0');
  std::string after = before;
  after[5] = 7;
  after[1500] = static_cast<char>(200);
  std::string operand;
  REQUIRE(EncodePageDelta(before, after, &operand));
  CHECK(operand.size() < 32);
  std::string merged;
  SECTION("over the stored page") {
    REQUIRE(Merge(&before, {operand}, &merged));
    CHECK(merged == after);
  }
  SECTION("over a missing page, which reads as zeros") {
    REQUIRE(Merge(nullptr, {operand}, &merged));
    CHECK(merged == after);
  }
}

TEST_CASE("a one-byte change anywhere in a page is found and carried alone") {
  // Every position, so every alignment of the 64- and 8-byte skips over unchanged bytes.
  std::mt19937 rng(7);
  std::string before(2048, '\0');
  for (auto& c : before) {
    c = static_cast<char>(rng() % 4 == 0 ? rng() : 0);
  }
  for (size_t pos = 0; pos < before.size(); ++pos) {
    std::string after = before;
    after[pos] = static_cast<char>(after[pos] ^ 0x5a);
    std::string operand;
    REQUIRE(EncodePageDelta(before, after, &operand));
    CHECK(operand.size() == 4 + 4 + 2 + 1);  // page length, offset, run length, the byte
    std::string merged;
    REQUIRE(Merge(&before, {operand}, &merged));
    REQUIRE(merged == after);
  }
}

TEST_CASE("AllZeroBytes finds a set byte at any position and length") {
  for (size_t len : {0, 1, 7, 8, 63, 64, 65, 127, 200, 2048}) {
    std::string s(len, '\0');
    CHECK(AllZeroBytes(s));
    for (size_t pos = 0; pos < len; ++pos) {
      s[pos] = 1;
      REQUIRE_FALSE(AllZeroBytes(s));
      s[pos] = 0;
    }
  }
  CHECK(AllZeroBytes(std::string_view()));
}

TEST_CASE("successive page deltas apply in order, later bytes winning") {
  std::mt19937 rng(7);
  std::string page(2040, '\0');
  std::string stored = page;
  std::vector<std::string> ops;
  for (int i = 0; i < 50; ++i) {
    std::string next = page;
    for (int k = 0; k < 3; ++k) {
      next[rng() % next.size()] = static_cast<char>(1 + rng() % 255);
    }
    std::string op;
    REQUIRE(EncodePageDelta(page, next, &op));
    ops.push_back(op);
    page = next;
  }
  std::string merged;
  REQUIRE(Merge(&stored, ops, &merged));
  CHECK(merged == page);

  SECTION("partial merge of the operands gives the same page") {
    auto op = NewPageMergeOperator();
    std::deque<rocksdb::Slice> dq(ops.begin(), ops.end());
    std::string combined;
    REQUIRE(op->PartialMergeMulti(rocksdb::Slice("k"), dq, &combined, nullptr));
    std::string again;
    REQUIRE(Merge(&stored, {combined}, &again));
    CHECK(again == page);
  }
}

TEST_CASE("a page delta is refused when the whole page is smaller") {
  std::string before(256, '\0');
  std::string after(256, '\x05');
  std::string operand;
  CHECK_FALSE(EncodePageDelta(before, after, &operand));
}

TEST_CASE("a page delta over a page of another length fails the merge (corruption)") {
  std::string before(2048, '\0');
  std::string after = before;
  after[0] = 1;
  std::string operand;
  REQUIRE(EncodePageDelta(before, after, &operand));
  std::string wrong(100, '\0');
  std::string merged;
  CHECK_FALSE(Merge(&wrong, {operand}, &merged));
  SECTION("and so does a truncated operand") {
    CHECK_FALSE(Merge(&before, {operand.substr(0, operand.size() - 1)}, &merged));
  }
}

}  // namespace
}  // namespace cuckood::storage
