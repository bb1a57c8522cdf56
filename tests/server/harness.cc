#include "tests/server/harness.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "resp/writer.h"

namespace cuckood::test {

namespace {

// Where the data folders go: $CUCKOOD_TEST_TMPDIR, else /dev/shm when it is there (RocksDB's
// fsyncs while it creates a database cost most of a test's time on a disk), else the usual
// temporary folder.
std::filesystem::path TempRoot() {
  if (const char* dir = std::getenv("CUCKOOD_TEST_TMPDIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  std::error_code ec;
  if (std::filesystem::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0) {
    return "/dev/shm";
  }
  return std::filesystem::temp_directory_path();
}

std::filesystem::path MakeTempDir() {
  std::string tmpl = (TempRoot() / "cuckood-stest-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  return tmpl;
}

server::Client AuthenticatedClient(server::Server& server) {
  server::Client c;
  c.id = server.clients().NextId();
  c.authenticated = true;
  c.addr = "127.0.0.1:40000";
  c.laddr = "127.0.0.1:6379";
  return c;
}

}  // namespace

TestServer::TestServer(const std::function<void(server::Config&)>& tweak) : dir_(MakeTempDir()) {
  spdlog::set_level(spdlog::level::warn);  // no start/stop lines in the test output
  server::Config cfg;
  cfg.bind = "127.0.0.1";
  cfg.port = 0;
  cfg.dir = (dir_ / "data").string();
  cfg.workers = 1;
  cfg.appendfsync = "no";
  cfg.loglevel = "warning";
  cfg.block_cache_size = 8ULL << 20;
  cfg.cache_size = 8ULL << 20;
  cfg.write_buffer_size = 4ULL << 20;
  if (tweak) {
    tweak(cfg);
  }
  try {
    server_ = std::make_unique<server::Server>(cfg);
    server_->Start();
  } catch (...) {
    server_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
  client_ = AuthenticatedClient(*server_);
}

TestServer::~TestServer() {
  server_.reset();  // stops the io threads and closes the database
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

server::Client TestServer::NewClient() {
  return AuthenticatedClient(*server_);
}

std::string TestServer::Run(std::initializer_list<std::string_view> argv) {
  return Run(client_, argv);
}

std::string TestServer::Run(server::Client& client, std::initializer_list<std::string_view> argv) {
  return Dispatch(client, server::Argv(argv.begin(), argv.end()));
}

std::string TestServer::Run(server::Client& client, const std::vector<std::string>& argv) {
  return Dispatch(client, server::Argv(argv.begin(), argv.end()));
}

std::string TestServer::Dispatch(server::Client& client, const server::Argv& argv) {
  std::string reply;
  resp::Writer writer(&reply, client.proto);
  // The one call into the dispatcher.
  server_->dispatcher().Dispatch(client, argv, writer);
  return reply;
}

std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

std::string Int(int64_t v) {
  return ":" + std::to_string(v) + "\r\n";
}

std::string Err(std::string_view msg) {
  return "-" + std::string(msg) + "\r\n";
}

std::string Array(std::initializer_list<std::string> items) {
  std::string out = "*" + std::to_string(items.size()) + "\r\n";
  for (const auto& item : items) {
    out += item;
  }
  return out;
}

std::string BulkPayload(std::string_view reply) {
  const size_t eol = reply.find("\r\n");
  if (reply.empty() || reply[0] != '$' || eol == std::string_view::npos) {
    throw std::runtime_error("not a bulk reply: " + std::string(reply.substr(0, 40)));
  }
  const size_t len = std::stoul(std::string(reply.substr(1, eol - 1)));
  if (reply.size() != eol + 2 + len + 2) {
    throw std::runtime_error("bulk reply of the wrong length");
  }
  return std::string(reply.substr(eol + 2, len));
}

std::vector<std::string> BulkArray(std::string_view reply) {
  const size_t eol = reply.find("\r\n");
  if (reply.empty() || reply[0] != '*' || eol == std::string_view::npos) {
    throw std::runtime_error("not an array reply: " + std::string(reply.substr(0, 40)));
  }
  const size_t n = std::stoul(std::string(reply.substr(1, eol - 1)));
  std::vector<std::string> out;
  size_t pos = eol + 2;
  for (size_t i = 0; i < n; ++i) {
    const size_t line = reply.find("\r\n", pos);
    if (reply.substr(pos, 1) != "$" || line == std::string_view::npos) {
      throw std::runtime_error("array element " + std::to_string(i) + " is not a bulk string");
    }
    const size_t len = std::stoul(std::string(reply.substr(pos + 1, line - pos - 1)));
    const size_t end = line + 2 + len + 2;
    out.push_back(BulkPayload(reply.substr(pos, end - pos)));
    pos = end;
  }
  if (pos != reply.size()) {
    throw std::runtime_error("bytes after the array");
  }
  return out;
}

std::string BulkArrayReply(const std::vector<std::string>& items) {
  std::string out = "*" + std::to_string(items.size()) + "\r\n";
  for (const auto& item : items) {
    out += Bulk(item);
  }
  return out;
}

}  // namespace cuckood::test
