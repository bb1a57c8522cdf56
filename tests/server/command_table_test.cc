#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <string_view>

#include "server/command.h"

namespace cuckood::server {
namespace {

CommandSpec WithArity(int arity) {
  return CommandSpec{.name = "t", .arity = arity};
}

TEST_CASE("ArityAccepts: a positive arity takes exactly that many arguments", "[command]") {
  const auto spec = WithArity(3);
  CHECK_FALSE(ArityAccepts(spec, 2));
  CHECK(ArityAccepts(spec, 3));
  CHECK_FALSE(ArityAccepts(spec, 4));
}

TEST_CASE("ArityAccepts: a negative arity takes at least that many (inclusive)", "[command]") {
  const auto spec = WithArity(-3);
  CHECK_FALSE(ArityAccepts(spec, 2));
  CHECK(ArityAccepts(spec, 3));
  CHECK(ArityAccepts(spec, 100));
}

TEST_CASE("ArityAccepts: arity -1 takes the bare command name", "[command]") {
  CHECK(ArityAccepts(WithArity(-1), 1));
  CHECK_FALSE(ArityAccepts(WithArity(1), 2));
}

CommandTable FullTable() {
  CommandTable table;
  RegisterConnectionCommands(table);
  RegisterTransactionCommands(table);
  RegisterKeyspaceCommands(table);
  RegisterStringCommands(table);
  RegisterServerCommands(table);
  RegisterReplicationCommands(table);
  RegisterIntrospectionCommands(table);
  RegisterCfCommands(table);
  RegisterPubSubCommands(table);
  RegisterDumpCommands(table);
  RegisterClusterCommands(table);
  return table;
}

template <typename F>
void ForEachRow(const CommandTable& table, F&& f) {
  for (const auto* spec : table.all()) {
    f(*spec);
    for (const auto& sub : spec->subcommands) {
      f(sub);
    }
  }
}

bool Has(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

const CommandSpec* FindRow(const CommandTable& table, std::string_view name) {
  const CommandSpec* found = nullptr;
  ForEachRow(table, [&](const CommandSpec& spec) {
    if (spec.name == name) {
      found = &spec;
    }
  });
  return found;
}

TEST_CASE("Every row's ACL categories are lower case, without '@', once each", "[command]") {
  const auto table = FullTable();
  ForEachRow(table, [](const CommandSpec& spec) {
    INFO(spec.name);
    CHECK_FALSE(spec.acl_categories.empty());
    for (const auto& c : spec.acl_categories) {
      CHECK_FALSE(c.empty());
      CHECK(c.find('@') == std::string::npos);
      CHECK(std::none_of(c.begin(), c.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; }));
      CHECK(std::count(spec.acl_categories.begin(), spec.acl_categories.end(), c) == 1);
    }
    // Exactly one of fast and slow.
    CHECK(Has(spec.acl_categories, "fast") != Has(spec.acl_categories, "slow"));
  });
}

TEST_CASE("Row flags imply their ACL categories", "[command]") {
  const auto table = FullTable();
  ForEachRow(table, [](const CommandSpec& spec) {
    INFO(spec.name);
    if (spec.flags & kWrite) {
      CHECK(Has(spec.acl_categories, "write"));
    }
    if (spec.flags & kReadOnly) {
      CHECK(Has(spec.acl_categories, "read"));
    }
    if (spec.flags & kAdmin) {
      CHECK(Has(spec.acl_categories, "admin"));
      CHECK(Has(spec.acl_categories, "dangerous"));
    }
    if (spec.name.rfind("cf.", 0) == 0) {
      CHECK(spec.acl_categories.back() == "cuckoo");
    }
  });
}

TEST_CASE("Canonical ACL categories follow Redis's order, module categories last", "[command]") {
  const CommandSpec spec{
      .name = "t", .flags = kWrite | kFast, .acl_categories = {"cuckoo", "keyspace"}};
  CHECK(CanonicalAclCategories(spec) ==
        std::vector<std::string>{"keyspace", "write", "fast", "cuckoo"});
  const CommandSpec slow{.name = "t", .flags = kAdmin};
  CHECK(CanonicalAclCategories(slow) == std::vector<std::string>{"admin", "slow", "dangerous"});
}

TEST_CASE("Rows carry Redis's command tips", "[command]") {
  const auto table = FullTable();
  const auto tips = [&](std::string_view name) {
    const CommandSpec* spec = FindRow(table, name);
    REQUIRE(spec != nullptr);
    return spec->tips;
  };
  CHECK(tips("ping") ==
        std::vector<std::string>{"request_policy:all_shards", "response_policy:all_succeeded"});
  CHECK(tips("config|set") ==
        std::vector<std::string>{"request_policy:all_nodes", "response_policy:all_succeeded"});
  CHECK(tips("client|list") == std::vector<std::string>{"nondeterministic_output"});
  CHECK(tips("migrate") == std::vector<std::string>{"nondeterministic_output"});
  CHECK(tips("keys") ==
        std::vector<std::string>{"request_policy:all_shards", "nondeterministic_output_order"});
  CHECK(tips("command|docs") == std::vector<std::string>{"nondeterministic_output_order"});
  CHECK(tips("cf.add").empty());
  CHECK(tips("get").empty());
}

TEST_CASE("Every row has a handler, a summary and a group", "[command]") {
  const auto table = FullTable();
  ForEachRow(table, [](const CommandSpec& spec) {
    INFO(spec.name);
    CHECK(spec.handler != nullptr);
    CHECK_FALSE(spec.summary.empty());
    CHECK_FALSE(spec.group.empty());
    CHECK(spec.arity != 0);
  });
}

}  // namespace
}  // namespace cuckood::server
