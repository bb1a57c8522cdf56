// Reply encodings, byte for byte, in RESP2 and RESP3.
#include "resp/writer.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace cuckood::resp {
namespace {

using namespace std::string_literals;

// The bytes one call on a fresh writer of protocol `proto` appends.
template <typename Fn>
std::string Encode(int proto, Fn fn) {
  std::string out;
  Writer writer(&out, proto);
  fn(writer);
  return out;
}

// The same bytes in both protocols.
template <typename Fn>
std::string EncodeBoth(Fn fn) {
  const std::string resp2 = Encode(2, fn);
  REQUIRE(resp2 == Encode(3, fn));
  return resp2;
}

TEST_CASE("Writer reports its protocol and buffer", "[writer]") {
  std::string out;
  Writer writer(&out, 3);
  CHECK(writer.proto() == 3);
  CHECK(writer.buffer() == &out);
}

TEST_CASE("Writer appends to what the buffer already holds", "[writer]") {
  std::string out = "+OK\r\n";
  Writer writer(&out, 2);
  writer.Integer(7);
  writer.Bulk("x");
  CHECK(out == "+OK\r\n:7\r\n$1\r\nx\r\n");
}

TEST_CASE("SimpleString is +s CRLF in both protocols", "[writer]") {
  CHECK(EncodeBoth([](Writer& w) { w.SimpleString("OK"); }) == "+OK\r\n");
  CHECK(EncodeBoth([](Writer& w) { w.SimpleString(""); }) == "+\r\n");
}

TEST_CASE("Error is -msg CRLF with CR and LF in the message replaced by spaces", "[writer]") {
  CHECK(EncodeBoth([](Writer& w) { w.Error("ERR unknown command"); }) ==
        "-ERR unknown command\r\n");
  CHECK(EncodeBoth([](Writer& w) { w.Error("ERR a\r\nb\nc\r"); }) == "-ERR a  b c \r\n");
}

TEST_CASE("Integer is :v CRLF across the whole int64 range", "[writer]") {
  CHECK(EncodeBoth([](Writer& w) { w.Integer(0); }) == ":0\r\n");
  CHECK(EncodeBoth([](Writer& w) { w.Integer(-1); }) == ":-1\r\n");
  CHECK(EncodeBoth([](Writer& w) { w.Integer(1234567890); }) == ":1234567890\r\n");
  CHECK(EncodeBoth([](Writer& w) { w.Integer(std::numeric_limits<int64_t>::max()); }) ==
        ":9223372036854775807\r\n");
  CHECK(EncodeBoth([](Writer& w) { w.Integer(std::numeric_limits<int64_t>::min()); }) ==
        ":-9223372036854775808\r\n");
}

TEST_CASE("Bulk is $len CRLF bytes CRLF and binary-safe", "[writer]") {
  CHECK(EncodeBoth([](Writer& w) { w.Bulk("hello"); }) == "$5\r\nhello\r\n");
  CHECK(EncodeBoth([](Writer& w) { w.Bulk(""); }) == "$0\r\n\r\n");
  CHECK(EncodeBoth([](Writer& w) { w.Bulk("a\r\n\0b"s); }) == "$5\r\na\r\n\0b\r\n"s);
}

TEST_CASE("Null is $-1 in RESP2 and _ in RESP3", "[writer]") {
  CHECK(Encode(2, [](Writer& w) { w.Null(); }) == "$-1\r\n");
  CHECK(Encode(3, [](Writer& w) { w.Null(); }) == "_\r\n");
}

TEST_CASE("NullArray is *-1 in RESP2 and _ in RESP3", "[writer]") {
  CHECK(Encode(2, [](Writer& w) { w.NullArray(); }) == "*-1\r\n");
  CHECK(Encode(3, [](Writer& w) { w.NullArray(); }) == "_\r\n");
}

TEST_CASE("ArrayHeader is *n in both protocols", "[writer]") {
  CHECK(EncodeBoth([](Writer& w) { w.ArrayHeader(0); }) == "*0\r\n");
  CHECK(EncodeBoth([](Writer& w) { w.ArrayHeader(3); }) == "*3\r\n");
}

TEST_CASE("MapHeader is %n in RESP3 and an array of 2n in RESP2", "[writer]") {
  CHECK(Encode(3, [](Writer& w) { w.MapHeader(2); }) == "%2\r\n");
  CHECK(Encode(2, [](Writer& w) { w.MapHeader(2); }) == "*4\r\n");
  CHECK(Encode(2, [](Writer& w) { w.MapHeader(0); }) == "*0\r\n");
}

TEST_CASE("SetHeader is ~n in RESP3 and *n in RESP2", "[writer]") {
  CHECK(Encode(3, [](Writer& w) { w.SetHeader(5); }) == "~5\r\n");
  CHECK(Encode(2, [](Writer& w) { w.SetHeader(5); }) == "*5\r\n");
}

TEST_CASE("Bool is #t/#f in RESP3 and :1/:0 in RESP2", "[writer]") {
  CHECK(Encode(3, [](Writer& w) { w.Bool(true); }) == "#t\r\n");
  CHECK(Encode(3, [](Writer& w) { w.Bool(false); }) == "#f\r\n");
  CHECK(Encode(2, [](Writer& w) { w.Bool(true); }) == ":1\r\n");
  CHECK(Encode(2, [](Writer& w) { w.Bool(false); }) == ":0\r\n");
}

TEST_CASE("Double uses %.17g text: a , reply in RESP3, a bulk string in RESP2", "[writer]") {
  struct Case {
    double value;
    std::string text;
  };
  const Case cases[] = {
      {1.5, "1.5"},
      {3.0, "3"},
      {0.1, "0.10000000000000001"},
      {-2.25, "-2.25"},
      {0.0, "0"},
      {-0.0, "-0"},
      {1e300, "1.0000000000000001e+300"},
      {1e-7, "9.9999999999999995e-08"},
      {123456789012345678.0, "1.2345678901234568e+17"},
      {std::numeric_limits<double>::infinity(), "inf"},
      {-std::numeric_limits<double>::infinity(), "-inf"},
      {std::numeric_limits<double>::quiet_NaN(), "nan"},
      {-std::numeric_limits<double>::quiet_NaN(), "nan"},
  };
  for (const Case& c : cases) {
    INFO("text " << c.text);
    CHECK(Encode(3, [&](Writer& w) { w.Double(c.value); }) == "," + c.text + "\r\n");
    CHECK(Encode(2, [&](Writer& w) { w.Double(c.value); }) ==
          "$" + std::to_string(c.text.size()) + "\r\n" + c.text + "\r\n");
  }
}

TEST_CASE("Verbatim is =len CRLF txt:s CRLF in RESP3 and a bulk string in RESP2", "[writer]") {
  CHECK(Encode(3, [](Writer& w) { w.Verbatim("hello"); }) == "=9\r\ntxt:hello\r\n");
  CHECK(Encode(3, [](Writer& w) { w.Verbatim(""); }) == "=4\r\ntxt:\r\n");
  CHECK(Encode(2, [](Writer& w) { w.Verbatim("hello"); }) == "$5\r\nhello\r\n");
}

TEST_CASE("Raw appends bytes unchanged", "[writer]") {
  CHECK(EncodeBoth([](Writer& w) { w.Raw("+PONG\r\n\0x"s); }) == "+PONG\r\n\0x"s);
}

TEST_CASE("A nested RESP3 reply downgrades to RESP2 arrays", "[writer]") {
  auto reply = [](Writer& w) {
    w.MapHeader(2);
    w.Bulk("size");
    w.Integer(10);
    w.Bulk("ratio");
    w.Double(0.5);
  };
  CHECK(Encode(3, reply) == "%2\r\n$4\r\nsize\r\n:10\r\n$5\r\nratio\r\n,0.5\r\n");
  CHECK(Encode(2, reply) == "*4\r\n$4\r\nsize\r\n:10\r\n$5\r\nratio\r\n$3\r\n0.5\r\n");
}

}  // namespace
}  // namespace cuckood::resp
