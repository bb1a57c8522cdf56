// The server family: CONFIG, SLOWLOG, LATENCY, DEBUG, TIME, LASTSAVE, SHUTDOWN ABORT, MONITOR.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

TEST_CASE("CONFIG GET answers name, value pairs for the matching options", "[server][config]") {
  TestServer ts;
  CHECK(ts.Run({"CONFIG", "GET", "databases"}) == "*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n");
  CHECK(ts.Run({"CONFIG", "GET", "no-such-option"}) == "*0\r\n");
  SECTION("a glob matches several, each once") {
    const auto pairs = BulkArray(ts.Run({"CONFIG", "GET", "slowlog-*", "slowlog-max-len"}));
    REQUIRE(pairs.size() == 4);
    CHECK(pairs[0] == "slowlog-log-slower-than");
    CHECK(pairs[2] == "slowlog-max-len");
  }
  SECTION("RESP3 map") {
    REQUIRE(ts.Run({"HELLO", "3"}).rfind("%", 0) == 0);
    CHECK(ts.Run({"CONFIG", "GET", "databases"}) == "%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n");
  }
  CHECK(ts.Run({"CONFIG", "GET"}) == "-ERR wrong number of arguments for 'config|get' command\r\n");
}

TEST_CASE("CONFIG SET changes a mutable option at run time", "[server][config]") {
  TestServer ts;
  CHECK(ts.Run({"CONFIG", "SET", "slowlog-max-len", "7"}) == "+OK\r\n");
  CHECK(ts.Run({"CONFIG", "GET", "slowlog-max-len"}) ==
        "*2\r\n$15\r\nslowlog-max-len\r\n$1\r\n7\r\n");
  SECTION("the CF defaults apply to filters created afterwards") {
    CHECK(ts.Run({"CONFIG", "SET", "cf-bucket-size", "4", "cf-max-iterations", "50"}) == "+OK\r\n");
    REQUIRE(ts.Run({"CF.RESERVE", "f", "1000"}) == "+OK\r\n");
    CHECK(ts.Run({"CF.INFO", "f"}) ==
          "*16\r\n+Size\r\n:1080\r\n+Number of buckets\r\n:256\r\n+Number of filters\r\n:1\r\n"
          "+Number of items inserted\r\n:0\r\n+Number of items deleted\r\n:0\r\n"
          "+Bucket size\r\n:4\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:50\r\n");
  }
}

TEST_CASE("CONFIG SET refuses bad names and values, changing nothing", "[server][config]") {
  TestServer ts;
  CHECK(ts.Run({"CONFIG", "SET", "no-such-option", "1"}) ==
        "-ERR Unknown option or number of arguments for CONFIG SET - 'no-such-option'\r\n");
  CHECK(ts.Run({"CONFIG", "SET", "dir", "/tmp"}) ==
        "-ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected "
        "config\r\n");
  CHECK(ts.Run({"CONFIG", "SET", "databases", "4"}) ==
        "-ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable "
        "config\r\n");
  CHECK(ts.Run({"CONFIG", "SET", "slowlog-max-len", "1", "slowlog-max-len", "2"}) ==
        "-ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - duplicate "
        "parameter\r\n");
  CHECK(ts.Run({"CONFIG", "SET", "cf-bucket-size", "256"}) ==
        "-ERR CONFIG SET failed (possibly related to argument 'cf-bucket-size') - argument must "
        "be between 1 and 255 inclusive\r\n");
  CHECK(ts.Run({"CONFIG", "SET", "slowlog-max-len", "many"}) ==
        "-ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - argument "
        "couldn't be parsed into an integer\r\n");
  CHECK(ts.Run({"CONFIG", "SET", "slowlog-max-len", "1", "cf-bucket-size"}) ==
        "-ERR syntax error\r\n");
  CHECK(ts.Run({"CONFIG", "SET", "slowlog-max-len"}) ==
        "-ERR wrong number of arguments for 'config|set' command\r\n");
  SECTION("a failing value rolls back the ones before it") {
    CHECK(ts.Run({"CONFIG", "SET", "slowlog-max-len", "3", "cf-bucket-size", "0"})
              .rfind("-ERR CONFIG SET failed (possibly related to argument 'cf-bucket-size')", 0) ==
          0);
  }
  CHECK(ts.Run({"CONFIG", "GET", "slowlog-max-len"}) ==
        "*2\r\n$15\r\nslowlog-max-len\r\n$3\r\n128\r\n");
  CHECK(ts.Run({"CONFIG", "GET", "cf-bucket-size"}) ==
        "*2\r\n$14\r\ncf-bucket-size\r\n$1\r\n2\r\n");
}

TEST_CASE("CONFIG REWRITE without a config file, RESETSTAT, unknown subcommands",
          "[server][config]") {
  TestServer ts;
  CHECK(ts.Run({"CONFIG", "REWRITE"}) == "-ERR The server is running without a config file\r\n");
  CHECK(ts.Run({"CONFIG", "RESETSTAT"}) == "+OK\r\n");
  CHECK(ts.Run({"CONFIG", "FROB"}) == "-ERR unknown subcommand 'FROB'. Try CONFIG HELP.\r\n");
  CHECK(ts.Run({"CONFIG", "HELP"}).rfind("*", 0) == 0);
}

TEST_CASE("SLOWLOG records commands at or above the threshold", "[server][slowlog]") {
  TestServer ts;
  REQUIRE(ts.Run({"CLIENT", "SETNAME", "slow-client"}) == "+OK\r\n");
  SECTION("threshold 0 logs every command, newest first") {
    REQUIRE(ts.Run({"CONFIG", "SET", "slowlog-log-slower-than", "0"}) == "+OK\r\n");
    CHECK(ts.Run({"SLOWLOG", "RESET"}) == "+OK\r\n");
    REQUIRE(ts.Run({"SET", "a", "b"}) == "+OK\r\n");
    REQUIRE(ts.Run({"CF.ADD", "f", "x"}) == ":1\r\n");
    const std::string newest = ts.Run({"SLOWLOG", "GET", "1"});
    CHECK(newest.rfind("*1\r\n*6\r\n:", 0) == 0);
    CHECK(newest.find("*3\r\n$6\r\nCF.ADD\r\n$1\r\nf\r\n$1\r\nx\r\n") != std::string::npos);
    CHECK(newest.find("$11\r\nslow-client\r\n") != std::string::npos);
    // (SLOWLOG GET 1 itself was logged too.)
    const std::string all = ts.Run({"SLOWLOG", "GET", "-1"});
    const size_t cf_add = all.find("*3\r\n$6\r\nCF.ADD\r\n$1\r\nf\r\n$1\r\nx\r\n");
    const size_t set = all.find("*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n");
    CHECK(all.find("$7\r\nSLOWLOG\r\n") < cf_add);
    CHECK(cf_add < set);
    CHECK(set != std::string::npos);
    CHECK(ts.Run({"SLOWLOG", "LEN"}) != ":0\r\n");
  }
  SECTION("slowlog-max-len bounds the log") {
    REQUIRE(ts.Run({"CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "2"}) ==
            "+OK\r\n");
    for (int i = 0; i < 5; ++i) {
      REQUIRE(ts.Run({"PING"}) == "+PONG\r\n");
    }
    CHECK(ts.Run({"SLOWLOG", "LEN"}) == ":2\r\n");
    CHECK(ts.Run({"SLOWLOG", "GET", "-1"}).rfind("*2\r\n", 0) == 0);
  }
  SECTION("threshold -1 logs nothing") {
    REQUIRE(ts.Run({"CONFIG", "SET", "slowlog-log-slower-than", "-1"}) == "+OK\r\n");
    REQUIRE(ts.Run({"SLOWLOG", "RESET"}) == "+OK\r\n");
    REQUIRE(ts.Run({"SET", "a", "b"}) == "+OK\r\n");
    CHECK(ts.Run({"SLOWLOG", "LEN"}) == ":0\r\n");
    CHECK(ts.Run({"SLOWLOG", "GET"}) == "*0\r\n");
  }
}

TEST_CASE("SLOWLOG argument errors", "[server][slowlog]") {
  TestServer ts;
  CHECK(ts.Run({"SLOWLOG", "GET", "-2"}) == "-ERR count should be greater than or equal to -1\r\n");
  CHECK(ts.Run({"SLOWLOG", "GET", "x"}) == "-ERR count should be greater than or equal to -1\r\n");
  CHECK(ts.Run({"SLOWLOG", "GET", "1", "2"}) ==
        "-ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP.\r\n");
  CHECK(ts.Run({"SLOWLOG", "LEN", "x"}) ==
        "-ERR wrong number of arguments for 'slowlog|len' command\r\n");
  CHECK(ts.Run({"SLOWLOG", "NOPE"}) == "-ERR unknown subcommand 'NOPE'. Try SLOWLOG HELP.\r\n");
}

TEST_CASE("LATENCY has no samples to report", "[server][latency]") {
  TestServer ts;
  CHECK(ts.Run({"LATENCY", "LATEST"}) == "*0\r\n");
  CHECK(ts.Run({"LATENCY", "HISTORY", "command"}) == "*0\r\n");
  CHECK(ts.Run({"LATENCY", "RESET"}) == ":0\r\n");
  CHECK(ts.Run({"LATENCY", "GRAPH", "command"}) ==
        "-ERR No samples available for event 'command'\r\n");
  CHECK(ts.Run({"LATENCY", "HISTORY"}) ==
        "-ERR wrong number of arguments for 'latency|history' command\r\n");
}

TEST_CASE("TIME answers seconds and microseconds as bulk strings", "[server]") {
  TestServer ts;
  const auto parts = BulkArray(ts.Run({"TIME"}));
  REQUIRE(parts.size() == 2);
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  CHECK(std::stoll(parts[0]) >= now - 5);
  CHECK(std::stoll(parts[0]) <= now + 5);
  CHECK(std::stoll(parts[1]) >= 0);
  CHECK(std::stoll(parts[1]) < 1000000);
}

TEST_CASE("LASTSAVE is the start time before any save", "[server]") {
  TestServer ts;
  CHECK(ts.Run({"LASTSAVE"}) == Int(ts.server().process().start_unix));
}

TEST_CASE("SHUTDOWN ABORT without a shutdown in progress, MONITOR unsupported", "[server]") {
  TestServer ts;
  CHECK(ts.Run({"SHUTDOWN", "ABORT"}) == "-ERR No shutdown in progress.\r\n");
  CHECK(ts.Run({"SHUTDOWN", "NOW", "BOGUS"}) == "-ERR syntax error\r\n");
  CHECK_FALSE(ts.server().shutting_down());
  CHECK(ts.Run({"MONITOR"}) == "-ERR MONITOR is not supported\r\n");
}

TEST_CASE("DEBUG OBJECT describes a key; DEBUG SLEEP 0", "[server][debug]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "12"}) == "+OK\r\n");
  const std::string line = ts.Run({"DEBUG", "OBJECT", "s"});
  CHECK(line.rfind("+Value at:0x", 0) == 0);
  CHECK(line.find(" refcount:2147483647 encoding:int serializedlength:2 lru:") !=
        std::string::npos);
  CHECK(line.substr(line.size() - 21) == " lru_seconds_idle:0\r\n");
  CHECK(ts.Run({"DEBUG", "OBJECT", "missing"}) == "-ERR no such key\r\n");
  CHECK(ts.Run({"DEBUG", "SLEEP", "0"}) == "+OK\r\n");
  CHECK(ts.Run({"DEBUG", "SLEEP", "soon"}) == "-ERR value is not a valid float\r\n");
}

TEST_CASE("DEBUG follows enable-debug-command", "[server][debug]") {
  SECTION("no refuses everyone") {
    TestServer ts([](server::Config& cfg) { cfg.enable_debug_command = "no"; });
    CHECK(ts.Run({"DEBUG", "SLEEP", "0"}) ==
          "-ERR DEBUG command not allowed. If the enable-debug-command option is set to "
          "\"local\", you can run it from a local connection, otherwise you need to set this "
          "option in the configuration file, and then restart the server.\r\n");
  }
  SECTION("local refuses a client from another host") {
    TestServer ts;
    auto remote = ts.NewClient();
    remote.addr = "10.0.0.7:51000";
    CHECK(ts.Run(remote, {"DEBUG", "SLEEP", "0"}).rfind("-ERR DEBUG command not allowed.", 0) == 0);
    CHECK(ts.Run({"DEBUG", "SLEEP", "0"}) == "+OK\r\n");
  }
}

}  // namespace
}  // namespace cuckood::test
