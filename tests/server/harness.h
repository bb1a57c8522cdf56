// In-process command tests: a Server over RocksDB in a temporary folder of its own (removed when
// the TestServer is destroyed; under /dev/shm when there is one, or $CUCKOOD_TEST_TMPDIR), and
// Run({...}) sending one command through the real dispatcher and returning the exact reply bytes.
// Every TestServer has its own folder, so tests run in parallel (ctest -j); the server listens on a
// free loopback port that no test connects to.
//
// Replies are complete when Run returns: the clients here never batch locks (lock_batching is
// false), so no reply waits for a write group.
#pragma once

#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/config.h"
#include "server/server.h"

namespace cuckood::test {

// The WRONGTYPE error reply, as it goes on the wire.
inline constexpr std::string_view kWrongType =
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

class TestServer {
 public:
  // tweak, when given, changes the lean test config before the server starts.
  explicit TestServer(const std::function<void(server::Config&)>& tweak = {});
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  server::Server& server() { return *server_; }
  const std::filesystem::path& dir() const { return dir_; }

  // The default client (authenticated, RESP2 until it sends HELLO 3).
  server::Client& client() { return client_; }
  // Another client of the same server, authenticated, with an id of its own.
  server::Client NewClient();

  // Runs one command as the default client / as `client`; the reply's bytes, in the protocol
  // the client speaks (client.proto).
  std::string Run(std::initializer_list<std::string_view> argv);
  std::string Run(server::Client& client, std::initializer_list<std::string_view> argv);
  std::string Run(server::Client& client, const std::vector<std::string>& argv);

 private:
  std::string Dispatch(server::Client& client, const server::Argv& argv);

  std::filesystem::path dir_;
  std::unique_ptr<server::Server> server_;
  server::Client client_;
};

// A string literal's bytes, NULs included (without the terminating one).
template <size_t N>
std::string Bytes(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

// Reply builders for expected values.
std::string Bulk(std::string_view s);                         // $len\r\ns\r\n
std::string Int(int64_t v);                                   // :v\r\n
std::string Err(std::string_view msg);                        // -msg\r\n
std::string Array(std::initializer_list<std::string> items);  // *n\r\n + items

// The payload of a bulk-string reply ("$len\r\n...\r\n"); throws when the reply is not one.
std::string BulkPayload(std::string_view reply);
// The elements of an array reply of bulk strings ("*n\r\n$..."), in order; throws otherwise.
std::vector<std::string> BulkArray(std::string_view reply);
// A RESP2 array of bulk strings.
std::string BulkArrayReply(const std::vector<std::string>& items);

}  // namespace cuckood::test
