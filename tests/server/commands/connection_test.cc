// Connection commands: PING, ECHO, QUIT, RESET, HELLO, AUTH, SELECT and CLIENT's subcommands.
#include <catch2/catch.hpp>
#include <string>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

// HELLO's reply for a standalone master in RESP2 (an array of name, value pairs).
std::string Hello2(uint64_t id) {
  return "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n"
         "$5\r\nproto\r\n:2\r\n$2\r\nid\r\n" +
         Int(static_cast<int64_t>(id)) +
         "$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"
         "$7\r\nmodules\r\n*1\r\n*8\r\n$4\r\nname\r\n$2\r\nbf\r\n$3\r\nver\r\n:20820\r\n"
         "$4\r\npath\r\n$0\r\n\r\n$4\r\nargs\r\n*0\r\n";
}

TEST_CASE("PING answers PONG or echoes its argument", "[connection]") {
  TestServer ts;
  CHECK(ts.Run({"PING"}) == "+PONG\r\n");
  CHECK(ts.Run({"PING", "hi"}) == "$2\r\nhi\r\n");
  CHECK(ts.Run({"ping", "a", "b"}) == "-ERR wrong number of arguments for 'ping' command\r\n");
}

TEST_CASE("ECHO returns its argument as a bulk string", "[connection]") {
  TestServer ts;
  CHECK(ts.Run({"ECHO", "hello world"}) == Bulk("hello world"));
  CHECK(ts.Run({"ECHO", ""}) == "$0\r\n\r\n");
  CHECK(ts.Run({"ECHO"}) == "-ERR wrong number of arguments for 'echo' command\r\n");
}

TEST_CASE("An unknown command names itself and its first arguments", "[connection]") {
  TestServer ts;
  CHECK(ts.Run({"NOSUCHCMD", "a", "b"}) ==
        "-ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' 'b' \r\n");
  CHECK(ts.Run({"nosuch"}) == "-ERR unknown command 'nosuch', with args beginning with: \r\n");
}

TEST_CASE("SELECT switches between separate databases", "[connection]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "k", "in-db0"}) == ":1\r\n");
  CHECK(ts.Run({"SELECT", "5"}) == "+OK\r\n");
  CHECK(ts.client().db == 5);
  CHECK(ts.Run({"EXISTS", "k"}) == ":0\r\n");
  REQUIRE(ts.Run({"SET", "k", "in-db5"}) == "+OK\r\n");
  CHECK(ts.Run({"SELECT", "0"}) == "+OK\r\n");
  CHECK(ts.Run({"CF.EXISTS", "k", "in-db0"}) == ":1\r\n");
  CHECK(ts.Run({"TYPE", "k"}) == "+MBbloomCF\r\n");
  SECTION("another client has its own selected database") {
    auto other = ts.NewClient();
    CHECK(ts.Run(other, {"SELECT", "5"}) == "+OK\r\n");
    CHECK(ts.Run(other, {"GET", "k"}) == Bulk("in-db5"));
    CHECK(ts.Run({"TYPE", "k"}) == "+MBbloomCF\r\n");
  }
  SECTION("out of range and malformed indexes") {
    CHECK(ts.Run({"SELECT", "16"}) == "-ERR DB index is out of range\r\n");
    CHECK(ts.Run({"SELECT", "15"}) == "+OK\r\n");
    CHECK(ts.Run({"SELECT", "-1"}) == "-ERR DB index is out of range\r\n");
    CHECK(ts.Run({"SELECT", "one"}) == "-ERR value is not an integer or out of range\r\n");
    CHECK(ts.Run({"SELECT", "2147483648"}) ==
          "-ERR value is out of range, value must between -2147483648 and 2147483647\r\n");
    CHECK(ts.client().db == 15);
  }
}

TEST_CASE("HELLO answers the server's description in the protocol it selects", "[connection]") {
  TestServer ts;
  const uint64_t id = ts.client().id;
  SECTION("without arguments it stays on RESP2") {
    CHECK(ts.Run({"HELLO"}) == Hello2(id));
    CHECK(ts.client().proto == 2);
  }
  SECTION("HELLO 3 answers a map and switches the client to RESP3") {
    const std::string reply = ts.Run({"HELLO", "3"});
    CHECK(reply.rfind("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n", 0) == 0);
    CHECK(reply.find("$5\r\nproto\r\n:3\r\n") != std::string::npos);
    CHECK(ts.client().proto == 3);
    CHECK(ts.Run({"HELLO", "2"}) == Hello2(id));
    CHECK(ts.client().proto == 2);
  }
  SECTION("bad versions and options change nothing") {
    CHECK(ts.Run({"HELLO", "4"}) == "-NOPROTO unsupported protocol version\r\n");
    CHECK(ts.Run({"HELLO", "1"}) == "-NOPROTO unsupported protocol version\r\n");
    CHECK(ts.Run({"HELLO", "three"}) ==
          "-ERR Protocol version is not an integer or out of range\r\n");
    CHECK(ts.Run({"HELLO", "3", "FOO"}) == "-ERR Syntax error in HELLO option 'FOO'\r\n");
    CHECK(ts.Run({"HELLO", "3", "SETNAME"}) == "-ERR Syntax error in HELLO option 'SETNAME'\r\n");
    CHECK(ts.client().proto == 2);
  }
  SECTION("SETNAME names the client") {
    REQUIRE(ts.Run({"HELLO", "3", "SETNAME", "worker-1"}).rfind("%7\r\n", 0) == 0);
    CHECK(ts.Run({"CLIENT", "GETNAME"}) == Bulk("worker-1"));
  }
}

TEST_CASE("With requirepass, commands wait for AUTH", "[connection]") {
  TestServer ts([](server::Config& cfg) { cfg.requirepass = "s3cret"; });
  auto c = ts.NewClient();
  c.authenticated = false;
  CHECK(ts.Run(c, {"GET", "k"}) == "-NOAUTH Authentication required.\r\n");
  CHECK(ts.Run(c, {"HELLO", "3"}) ==
        "-NOAUTH HELLO must be called with the client already authenticated, otherwise the "
        "HELLO AUTH <user> <pass> option can be used to authenticate the client and select the "
        "RESP protocol version at the same time\r\n");
  CHECK(ts.Run(c, {"AUTH", "wrong"}) ==
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  CHECK(ts.Run(c, {"AUTH", "someone", "s3cret"}) ==
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  CHECK_FALSE(c.authenticated);
  SECTION("AUTH password") {
    CHECK(ts.Run(c, {"AUTH", "s3cret"}) == "+OK\r\n");
    CHECK(ts.Run(c, {"GET", "k"}) == "$-1\r\n");
  }
  SECTION("AUTH default password") {
    CHECK(ts.Run(c, {"AUTH", "default", "s3cret"}) == "+OK\r\n");
    CHECK(ts.Run(c, {"PING"}) == "+PONG\r\n");
  }
  SECTION("HELLO with AUTH authenticates and switches protocol at once") {
    CHECK(ts.Run(c, {"HELLO", "3", "AUTH", "default", "s3cret"}).rfind("%7\r\n", 0) == 0);
    CHECK(c.authenticated);
    CHECK(c.proto == 3);
  }
  SECTION("RESET logs the client out again") {
    REQUIRE(ts.Run(c, {"AUTH", "s3cret"}) == "+OK\r\n");
    CHECK(ts.Run(c, {"RESET"}) == "+RESET\r\n");
    CHECK(ts.Run(c, {"GET", "k"}) == "-NOAUTH Authentication required.\r\n");
  }
}

TEST_CASE("AUTH without a configured password is refused", "[connection]") {
  TestServer ts;
  CHECK(ts.Run({"AUTH", "x"}) ==
        "-ERR AUTH <password> called without any password configured for the default user. Are "
        "you sure your configuration is correct?\r\n");
  CHECK(ts.Run({"AUTH", "default", "anything"}) == "+OK\r\n");
  CHECK(ts.Run({"AUTH", "a", "b", "c"}) == "-ERR syntax error\r\n");
}

TEST_CASE("RESET returns the client to a fresh connection's state", "[connection]") {
  TestServer ts;
  REQUIRE(ts.Run({"SELECT", "3"}) == "+OK\r\n");
  REQUIRE(ts.Run({"CLIENT", "SETNAME", "n"}) == "+OK\r\n");
  REQUIRE(ts.Run({"HELLO", "3"}).rfind("%", 0) == 0);
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  CHECK(ts.Run({"RESET"}) == "+RESET\r\n");
  auto& c = ts.client();
  CHECK(c.db == 0);
  CHECK(c.proto == 2);
  CHECK_FALSE(c.in_multi);
  CHECK(ts.Run({"CLIENT", "GETNAME"}) == "$-1\r\n");
  CHECK(ts.Run({"EXEC"}) == "-ERR EXEC without MULTI\r\n");
}

TEST_CASE("QUIT answers OK and asks for the connection to close", "[connection]") {
  TestServer ts;
  CHECK(ts.Run({"QUIT"}) == "+OK\r\n");
  CHECK(ts.client().close_after_reply);
}

TEST_CASE("CLIENT ID, SETNAME and GETNAME", "[connection][client]") {
  TestServer ts;
  auto other = ts.NewClient();
  CHECK(ts.Run({"CLIENT", "ID"}) == Int(static_cast<int64_t>(ts.client().id)));
  CHECK(ts.Run(other, {"CLIENT", "ID"}) == Int(static_cast<int64_t>(other.id)));
  CHECK(ts.client().id != other.id);
  CHECK(ts.Run({"CLIENT", "GETNAME"}) == "$-1\r\n");
  CHECK(ts.Run({"CLIENT", "SETNAME", "alpha"}) == "+OK\r\n");
  CHECK(ts.Run({"CLIENT", "GETNAME"}) == Bulk("alpha"));
  CHECK(ts.Run(other, {"CLIENT", "GETNAME"}) == "$-1\r\n");
  SECTION("names with spaces or control characters are refused") {
    for (std::string_view bad : {"a b", "x\ny", "tab\t"}) {
      CHECK(ts.Run({"CLIENT", "SETNAME", bad}) ==
            "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
    }
    CHECK(ts.Run({"CLIENT", "GETNAME"}) == Bulk("alpha"));
  }
  SECTION("an empty name clears it") {
    CHECK(ts.Run({"CLIENT", "SETNAME", ""}) == "+OK\r\n");
    CHECK(ts.Run({"CLIENT", "GETNAME"}) == "$-1\r\n");
  }
}

TEST_CASE("CLIENT INFO describes the calling client", "[connection][client]") {
  TestServer ts;
  REQUIRE(ts.Run({"CLIENT", "SETNAME", "me"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SELECT", "4"}) == "+OK\r\n");
  const std::string line = BulkPayload(ts.Run({"CLIENT", "INFO"}));
  CHECK(line.rfind("id=" + std::to_string(ts.client().id) + " ", 0) == 0);
  CHECK(line.find(" name=me ") != std::string::npos);
  CHECK(line.find(" db=4 ") != std::string::npos);
  CHECK(line.find(" resp=2 ") != std::string::npos);
  CHECK(line.find(" cmd=client|info ") != std::string::npos);
  CHECK(line.back() == '\n');
  SECTION("in RESP3 it is a verbatim string") {
    REQUIRE(ts.Run({"HELLO", "3"}).rfind("%", 0) == 0);
    const std::string reply = ts.Run({"CLIENT", "INFO"});
    CHECK(reply.rfind("=", 0) == 0);
    CHECK(reply.find("\r\ntxt:id=") != std::string::npos);
    CHECK(reply.find(" resp=3 ") != std::string::npos);
  }
}

TEST_CASE("CLIENT SETINFO sets the library attributes CLIENT INFO shows", "[connection][client]") {
  TestServer ts;
  CHECK(ts.Run({"CLIENT", "SETINFO", "LIB-NAME", "mylib"}) == "+OK\r\n");
  CHECK(ts.Run({"CLIENT", "SETINFO", "lib-ver", "1.2.3"}) == "+OK\r\n");
  const std::string line = BulkPayload(ts.Run({"CLIENT", "INFO"}));
  CHECK(line.find(" lib-name=mylib") != std::string::npos);
  CHECK(line.find(" lib-ver=1.2.3 io-thread=0\n") != std::string::npos);
  CHECK(ts.Run({"CLIENT", "SETINFO", "COLOR", "x"}) == "-ERR Unrecognized option 'COLOR'\r\n");
  CHECK(ts.Run({"CLIENT", "SETINFO", "LIB-NAME", "a b"}) ==
        "-ERR LIB-NAME cannot contain spaces, newlines or special characters.\r\n");
}

TEST_CASE("CLIENT subcommand errors", "[connection][client]") {
  TestServer ts;
  CHECK(ts.Run({"CLIENT", "FOO"}) == "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n");
  CHECK(ts.Run({"CLIENT"}) == "-ERR wrong number of arguments for 'client' command\r\n");
  CHECK(ts.Run({"CLIENT", "SETNAME"}) ==
        "-ERR wrong number of arguments for 'client|setname' command\r\n");
  CHECK(ts.Run({"CLIENT", "NO-EVICT", "maybe"}) == "-ERR syntax error\r\n");
  CHECK(ts.Run({"CLIENT", "NO-EVICT", "on"}) == "+OK\r\n");
  CHECK(ts.client().no_evict);
  CHECK(ts.Run({"CLIENT", "NO-TOUCH", "ON"}) == "+OK\r\n");
  CHECK(ts.client().no_touch);
  CHECK(ts.Run({"CLIENT", "LIST", "TYPE", "bogus"}) == "-ERR Unknown client type 'bogus'\r\n");
  CHECK(ts.Run({"CLIENT", "LIST", "ID", "abc"}) == "-ERR Invalid client ID\r\n");
  SECTION("CLIENT KILL with filters counts the clients it closed; the old form errs") {
    CHECK(ts.Run({"CLIENT", "KILL", "ID", "999999"}) == ":0\r\n");
    CHECK(ts.Run({"CLIENT", "KILL", "10.1.2.3:4567"}) == "-ERR No such client\r\n");
    CHECK(ts.Run({"CLIENT", "KILL", "ID", "0"}) == "-ERR client-id should be greater than 0\r\n");
  }
}

TEST_CASE("CLIENT PAUSE checks its timeout and mode", "[connection][client]") {
  TestServer ts;
  CHECK(ts.Run({"CLIENT", "PAUSE", "abc"}) == "-ERR timeout is not an integer or out of range\r\n");
  CHECK(ts.Run({"CLIENT", "PAUSE", "-1"}) == "-ERR timeout is negative\r\n");
  CHECK(ts.Run({"CLIENT", "PAUSE", "10", "READ"}) ==
        "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n");
  CHECK(ts.Run({"CLIENT", "UNPAUSE"}) == "+OK\r\n");
}

TEST_CASE("CLIENT HELP lists the subcommands as status lines", "[connection][client]") {
  TestServer ts;
  const std::string reply = ts.Run({"CLIENT", "HELP"});
  CHECK(reply.find("+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n") !=
        std::string::npos);
  CHECK(reply.find("+GETNAME\r\n") != std::string::npos);
  CHECK(reply.size() > 100);
  const std::string tail = "+HELP\r\n+    Prints this help.\r\n";
  REQUIRE(reply.size() > tail.size());
  CHECK(reply.substr(reply.size() - tail.size()) == tail);
}

}  // namespace
}  // namespace cuckood::test
