#include <catch2/catch.hpp>
#include <string>

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

}  // namespace
}  // namespace cuckood::server
