// COMMAND and its subcommands: COUNT, INFO, LIST (FILTERBY), GETKEYS(ANDFLAGS), DOCS, HELP.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_CASE("COMMAND COUNT matches the entries COMMAND lists", "[introspection]") {
  TestServer ts;
  const std::string count = ts.Run({"COMMAND", "COUNT"});
  REQUIRE(count.rfind(":", 0) == 0);
  const std::string n = count.substr(1, count.size() - 3);
  CHECK(std::stoi(n) > 50);
  CHECK(ts.Run({"COMMAND"}).rfind("*" + n + "\r\n", 0) == 0);
  const auto names = BulkArray(ts.Run({"COMMAND", "LIST"}));
  CHECK(Contains(names, "get"));
  CHECK(Contains(names, "cf.reserve"));
  CHECK(Contains(names, "client|setname"));  // subcommands are listed too
}

TEST_CASE("COMMAND INFO describes GET as Redis 7.0 does", "[introspection]") {
  TestServer ts;
  const std::string reply = ts.Run({"COMMAND", "INFO", "get"});
  // name, arity, flags, first key, last key, step, ACL categories, tips, then key specs.
  CHECK(reply.rfind("*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
                    "*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n",
                    0) == 0);
  CHECK(reply.substr(reply.size() - 4) == "*0\r\n");  // no subcommands
}

TEST_CASE("COMMAND INFO finds a CF command by any case, under its lower-case name",
          "[introspection]") {
  TestServer ts;
  // (The arity is not checked here: RedisBloom 2.8 registers none, so Redis shows -1, while
  // RedisBloom 8.4+ registers the real arities.)
  const std::string reply = ts.Run({"COMMAND", "INFO", "Cf.Add"});
  CHECK(reply.rfind("*1\r\n*10\r\n$6\r\ncf.add\r\n:", 0) == 0);
  CHECK(reply.find("+write\r\n+denyoom\r\n") != std::string::npos);
}

TEST_CASE("COMMAND INFO answers nil for an unknown name, in order", "[introspection]") {
  TestServer ts;
  const std::string reply = ts.Run({"COMMAND", "INFO", "nosuch", "ping"});
  CHECK(reply.rfind("*2\r\n$-1\r\n*10\r\n$4\r\nping\r\n", 0) == 0);
  SECTION("RESP3 null and sets") {
    REQUIRE(ts.Run({"HELLO", "3"}).rfind("%", 0) == 0);
    const std::string r3 = ts.Run({"COMMAND", "INFO", "nosuch", "get"});
    CHECK(r3.rfind("*2\r\n_\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n", 0) == 0);
  }
}

TEST_CASE("COMMAND LIST FILTERBY", "[introspection]") {
  TestServer ts;
  SECTION("PATTERN") {
    const auto cf = BulkArray(ts.Run({"COMMAND", "LIST", "FILTERBY", "PATTERN", "cf.*"}));
    for (std::string name :
         {"cf.reserve", "cf.add", "cf.addnx", "cf.insert", "cf.insertnx", "cf.exists", "cf.mexists",
          "cf.count", "cf.del", "cf.info", "cf.scandump", "cf.loadchunk"}) {
      INFO(name);
      CHECK(Contains(cf, name));
    }
    for (const auto& name : cf) {
      CHECK(name.rfind("cf.", 0) == 0);
    }
  }
  SECTION("MODULE bf lists the cuckoo filter commands only") {
    const auto bf = BulkArray(ts.Run({"COMMAND", "LIST", "FILTERBY", "MODULE", "bf"}));
    CHECK(Contains(bf, "cf.add"));
    for (const auto& name : bf) {
      CHECK(name.rfind("cf.", 0) == 0);
    }
    CHECK(ts.Run({"COMMAND", "LIST", "FILTERBY", "MODULE", "nosuchmodule"}) == "*0\r\n");
  }
  SECTION("ACLCAT") {
    const auto tx = BulkArray(ts.Run({"COMMAND", "LIST", "FILTERBY", "ACLCAT", "transaction"}));
    CHECK(Contains(tx, "multi"));
    CHECK(Contains(tx, "exec"));
    CHECK_FALSE(Contains(tx, "get"));
  }
  SECTION("bad filters") {
    CHECK(ts.Run({"COMMAND", "LIST", "FILTERBY", "COLOR", "x"}) == "-ERR syntax error\r\n");
    CHECK(ts.Run({"COMMAND", "LIST", "FILTERBY"}) == "-ERR syntax error\r\n");
  }
}

TEST_CASE("COMMAND GETKEYS extracts the key arguments", "[introspection]") {
  TestServer ts;
  CHECK(ts.Run({"COMMAND", "GETKEYS", "SET", "k", "v"}) == "*1\r\n$1\r\nk\r\n");
  CHECK(ts.Run({"COMMAND", "GETKEYS", "RENAME", "a", "b"}) == "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  CHECK(ts.Run({"COMMAND", "GETKEYS", "DEL", "a", "b", "c"}) ==
        "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
  CHECK(ts.Run({"COMMAND", "GETKEYS", "CF.ADD", "f", "item"}) == "*1\r\n$1\r\nf\r\n");
  SECTION("errors") {
    CHECK(ts.Run({"COMMAND", "GETKEYS", "NOSUCH", "x"}) == "-ERR Invalid command specified\r\n");
    CHECK(ts.Run({"COMMAND", "GETKEYS", "PING", "x"}) ==
          "-ERR The command has no key arguments\r\n");
    CHECK(ts.Run({"COMMAND", "GETKEYS", "GET", "a", "b"}) ==
          "-ERR Invalid number of arguments specified for command\r\n");
  }
}

TEST_CASE("COMMAND GETKEYSANDFLAGS adds each key's flags", "[introspection]") {
  TestServer ts;
  const std::string reply = ts.Run({"COMMAND", "GETKEYSANDFLAGS", "GET", "k"});
  CHECK(reply.rfind("*1\r\n*2\r\n$1\r\nk\r\n*", 0) == 0);
  CHECK(reply.find("+RO\r\n") != std::string::npos);
}

TEST_CASE("COMMAND DOCS gives a summary per command", "[introspection]") {
  TestServer ts;
  const std::string reply = ts.Run({"COMMAND", "DOCS", "get"});
  CHECK(reply.rfind("*2\r\n$3\r\nget\r\n", 0) == 0);
  CHECK(reply.find("$7\r\nsummary\r\n") != std::string::npos);
  CHECK(reply.find("$5\r\nsince\r\n$5\r\n1.0.0\r\n") != std::string::npos);
  CHECK(ts.Run({"COMMAND", "DOCS", "nosuch"}) == "*0\r\n");
}

TEST_CASE("COMMAND subcommand errors and HELP", "[introspection]") {
  TestServer ts;
  CHECK(ts.Run({"COMMAND", "FOO"}) == "-ERR unknown subcommand 'FOO'. Try COMMAND HELP.\r\n");
  CHECK(ts.Run({"COMMAND", "COUNT", "x"}) ==
        "-ERR wrong number of arguments for 'command|count' command\r\n");
  CHECK(ts.Run({"COMMAND", "HELP"})
            .find("+COMMAND <subcommand> [<arg> [value] [opt] ...]. "
                  "Subcommands are:\r\n") != std::string::npos);
}

}  // namespace
}  // namespace cuckood::test
