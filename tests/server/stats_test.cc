#include "server/stats.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <thread>
#include <vector>

namespace cuckood::server {
namespace {

// Percentiles are bucket upper bounds: within 1/64 above the exact value.
void CheckNear(double got, double exact) {
  INFO("got " << got << ", exact " << exact);
  CHECK(got >= exact);
  CHECK(got <= exact * (1 + 1.0 / 64) + 1);
}

TEST_CASE("LatencyHistogram is empty until a value is recorded", "[stats]") {
  LatencyHistogram h;
  CHECK(h.count() == 0);
  CHECK(h.Percentile(50) == 0);
  h.Record(7);
  CHECK(h.count() == 1);
  CHECK(h.Percentile(0) == 7);
  CHECK(h.Percentile(100) == 7);
  h.Reset();
  CHECK(h.count() == 0);
  CHECK(h.Percentile(99) == 0);
}

TEST_CASE("LatencyHistogram is exact below 128 microseconds", "[stats]") {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100; ++v) {
    h.Record(v);
  }
  CHECK(h.Percentile(1) == 1);
  CHECK(h.Percentile(50) == 50);
  CHECK(h.Percentile(50.5) == 51);
  CHECK(h.Percentile(99) == 99);
  CHECK(h.Percentile(100) == 100);
  CHECK(h.Percentile(-5) == 1);
  CHECK(h.Percentile(500) == 100);
}

TEST_CASE("LatencyHistogram percentiles of a uniform distribution are within 1/64", "[stats]") {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100000; ++v) {
    h.Record(v);
  }
  CHECK(h.count() == 100000);
  CheckNear(h.Percentile(50), 50000);
  CheckNear(h.Percentile(90), 90000);
  CheckNear(h.Percentile(99), 99000);
  CheckNear(h.Percentile(99.9), 99900);
  CheckNear(h.Percentile(100), 100000);
}

TEST_CASE("LatencyHistogram separates a slow tail", "[stats]") {
  LatencyHistogram h;
  for (int i = 0; i < 990; ++i) {
    h.Record(200);
  }
  for (int i = 0; i < 10; ++i) {
    h.Record(1000000);  // one second
  }
  CheckNear(h.Percentile(50), 200);
  CheckNear(h.Percentile(99), 200);
  CheckNear(h.Percentile(99.1), 1000000);
  CheckNear(h.Percentile(100), 1000000);
}

TEST_CASE("LatencyHistogram keeps huge values in the last bucket", "[stats]") {
  LatencyHistogram h;
  h.Record(UINT64_MAX);
  h.Record(1ULL << 50);
  CHECK(h.count() == 2);
  CHECK(h.Percentile(100) > 1e13);
  CHECK(std::isfinite(h.Percentile(100)));
}

TEST_CASE("LatencyHistogram counts every Record from concurrent threads", "[stats]") {
  LatencyHistogram h;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h] {
      for (uint64_t i = 0; i < 10000; ++i) {
        h.Record(i);
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  CHECK(h.count() == 40000);
  CheckNear(h.Percentile(50), 5000);
}

TEST_CASE("LatencyHistogram's n records of a value count as n single records", "[stats]") {
  LatencyHistogram one_by_one;
  LatencyHistogram at_once;
  const std::vector<std::pair<uint64_t, uint64_t>> records = {{3, 5}, {120, 1}, {4000, 7}, {9, 0}};
  for (const auto& [micros, n] : records) {
    for (uint64_t i = 0; i < n; ++i) {
      one_by_one.Record(micros);
    }
    at_once.Record(micros, n);
  }
  CHECK(at_once.count() == 13);
  CHECK(at_once.count() == one_by_one.count());
  for (double p : {0.0, 10.0, 38.0, 40.0, 50.0, 90.0, 100.0}) {
    CHECK(at_once.Percentile(p) == one_by_one.Percentile(p));
  }
  CHECK(at_once.Percentile(100) > at_once.Percentile(10));
}

TEST_CASE("Stats::For returns the same object for a name until the end", "[stats]") {
  Stats s;
  CommandStats& a = s.For("cf.add");
  CHECK(&s.For("cf.add") == &a);
  CHECK(&s.For("cf.exists") != &a);
  CHECK(s.All().empty());  // no calls yet

  a.calls += 3;
  a.usec += 30;
  a.latency.Record(10);
  s.For("cf.exists").failed_calls++;
  auto all = s.All();
  REQUIRE(all.size() == 2);
  CHECK(all[0].first == "cf.add");
  CHECK(all[0].second == &a);
  CHECK(all[1].first == "cf.exists");

  SECTION("ResetCommands zeroes in place; references stay valid") {
    s.ResetCommands();
    CHECK(&s.For("cf.add") == &a);
    CHECK(a.calls == 0);
    CHECK(a.usec == 0);
    CHECK(a.latency.count() == 0);
    CHECK(s.All().empty());
    a.calls++;
    CHECK(s.All().size() == 1);
  }
}

TEST_CASE("Stats::CountError groups errors by their upper-case first word", "[stats]") {
  Stats s;
  s.CountError("ERR unknown command 'foo'");
  s.CountError("-ERR syntax error");
  s.CountError("WRONGTYPE Operation against a key holding the wrong kind of value");
  s.CountError("NOAUTH");
  s.CountError("Filter is full");   // RedisBloom-style text without a code
  s.CountError("ERR: not a code");  // punctuation: not a code
  s.CountError("Err lower case");
  s.CountError("");
  const std::map<std::string, uint64_t> expected = {{"ERR", 6}, {"NOAUTH", 1}, {"WRONGTYPE", 1}};
  CHECK(s.Errors() == expected);
  CHECK(s.total_error_replies == 8);
}

TEST_CASE("Stats::Reset zeroes every counter", "[stats]") {
  Stats s;
  s.total_commands_processed = 10;
  s.total_connections_received = 2;
  s.keyspace_hits = 5;
  s.protocol_errors = 1;
  s.blocked_on_output = 1;
  s.For("ping").calls++;
  s.CountError("ERR x");
  s.SampleAt(1000);
  s.total_commands_processed += 100;
  s.SampleAt(1100);
  REQUIRE(s.instantaneous_ops_per_sec > 0);

  s.Reset();
  CHECK(s.total_commands_processed == 0);
  CHECK(s.total_connections_received == 0);
  CHECK(s.keyspace_hits == 0);
  CHECK(s.protocol_errors == 0);
  CHECK(s.blocked_on_output == 0);
  CHECK(s.total_error_replies == 0);
  CHECK(s.instantaneous_ops_per_sec == 0);
  CHECK(s.All().empty());
  CHECK(s.Errors().empty());
}

TEST_CASE("Stats::Sample averages rates over the last samples", "[stats]") {
  Stats s;
  s.SampleAt(1000);  // the first sample only records the counters
  CHECK(s.instantaneous_ops_per_sec == 0);

  // 16 samples 100 ms apart, 500 commands and 10240 bytes in / 2048 out in each.
  for (int i = 1; i <= 16; ++i) {
    s.total_commands_processed += 500;
    s.total_net_input_bytes += 10240;
    s.total_net_output_bytes += 2048;
    s.SampleAt(1000 + 100 * i);
    if (i == 1) {
      CHECK(s.instantaneous_ops_per_sec == 5000 / 16);  // one sample of 16 so far
    }
  }
  CHECK(s.instantaneous_ops_per_sec == 5000);
  CHECK(s.instantaneous_input_kbps_x100 == 10000);  // 100 KB/s
  CHECK(s.instantaneous_output_kbps_x100 == 2000);  // 20 KB/s

  SECTION("idle samples bring the rate down") {
    for (int i = 1; i <= 8; ++i) {
      s.SampleAt(2600 + 100 * i);
    }
    CHECK(s.instantaneous_ops_per_sec == 2500);
  }
  SECTION("a sample with no time elapsed is ignored") {
    s.total_commands_processed += 1000000;
    s.SampleAt(2600);
    CHECK(s.instantaneous_ops_per_sec == 5000);
  }
  SECTION("counters reset between samples count as idle") {
    s.total_commands_processed = 0;
    s.SampleAt(2700);
    CHECK(s.instantaneous_ops_per_sec == 5000 * 15 / 16);
  }
}

TEST_CASE("Stats::Sample uses the real clock", "[stats]") {
  Stats s;
  s.Sample();
  s.total_commands_processed += 1000;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  s.Sample();
  CHECK(s.instantaneous_ops_per_sec > 0);
  CHECK(s.instantaneous_ops_per_sec <= 1000 * 1000 / 50 / 16);
}

TEST_CASE("Stats: counts from many threads at once add up exactly", "[stats]") {
  // More threads than stripes, so that some share one.
  Stats s;
  CommandStats& cs = s.For("cf.add");
  constexpr int kThreads = kStatStripes + 3;
  constexpr uint64_t kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kEach; ++i) {
        cs.calls++;
        cs.usec += 2;
        cs.latency.Record(t < 2 ? 10 : 1000);  // two threads fast, the others slow
        s.total_commands_processed++;
        s.total_net_input_bytes += 3;
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  const uint64_t n = kThreads * kEach;
  CHECK(cs.calls.load() == n);
  CHECK(cs.usec.load() == 2 * n);
  CHECK(cs.latency.count() == n);
  CHECK(s.total_commands_processed.load() == n);
  CHECK(s.total_net_input_bytes.load() == 3 * n);
  // 2 of kThreads threads recorded 10 µs: the percentiles below and above that share.
  CHECK(cs.latency.Percentile(100.0 * 2 / kThreads - 1) == 10);
  CheckNear(cs.latency.Percentile(100.0 * 2 / kThreads + 1), 1000);
  s.Reset();
  CHECK(cs.calls.load() == 0);
  CHECK(cs.latency.count() == 0);
  CHECK(cs.latency.Percentile(50) == 0);
  CHECK(s.total_net_input_bytes.load() == 0);
}

}  // namespace
}  // namespace cuckood::server
