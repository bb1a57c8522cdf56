#include "replication/state.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "replication/link.h"

namespace cuckood::replication {

std::string NewReplicationId() {
  static const char* kHex = "0123456789abcdef";
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  std::string s(40, '0');
  for (auto& c : s) {
    c = kHex[rng() % 16];
  }
  return s;
}

namespace {

bool ValidId(const std::string& id) {
  if (id.size() != 40) {
    return false;
  }
  for (char c : id) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

}  // namespace

storage::StatusOr<NodeState> LoadState(const std::string& dir) {
  const auto path = std::filesystem::path(dir) / kStateFileName;
  std::ifstream in(path);
  NodeState st;
  if (!in) {
    st.replid = NewReplicationId();
    return st;
  }
  std::string line;
  int version = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    const auto sp = line.find(' ');
    const std::string name = line.substr(0, sp);
    const std::string value = sp == std::string::npos ? "" : line.substr(sp + 1);
    uint64_t n = 0;
    if (name == "format") {
      version = ParseU64(value, &n) ? static_cast<int>(n) : -1;
    } else if (name == "replid") {
      st.replid = value;
    } else if (name == "replid2") {
      st.replid2 = value;
    } else if (name == "replid2-seq" && ParseU64(value, &n)) {
      st.replid2_seq = n;
    } else if (name == "master-host") {
      st.master_host = value;
    } else if (name == "master-port" && ParseU64(value, &n) && n < 65536) {
      st.master_port = static_cast<int>(n);
    }
  }
  if (version != kStateFormatVersion) {
    return storage::Status(Code::kCorruption, path.string() + ": unknown format version " +
                                                  std::to_string(version) + " (this build reads " +
                                                  std::to_string(kStateFormatVersion) + ")");
  }
  if (!ValidId(st.replid)) {
    return storage::Status(Code::kCorruption, path.string() + ": malformed replid");
  }
  if (!st.replid2.empty() && !ValidId(st.replid2)) {
    st.replid2.clear();
  }
  return st;
}

storage::Status SaveState(const std::string& dir, const NodeState& st) {
  const auto path = std::filesystem::path(dir) / kStateFileName;
  const auto tmp = std::filesystem::path(dir) / (std::string(kStateFileName) + ".tmp");
  std::ostringstream out;
  out << "# cuckood replication state: written by the server, not to be edited\n";
  out << "format " << kStateFormatVersion << "\n";
  out << "replid " << st.replid << "\n";
  if (!st.replid2.empty()) {
    out << "replid2 " << st.replid2 << "\n";
    out << "replid2-seq " << st.replid2_seq << "\n";
  }
  if (!st.master_host.empty()) {
    out << "master-host " << st.master_host << "\n";
    out << "master-port " << st.master_port << "\n";
  }
  const std::string data = out.str();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return {Code::kIoError, "cannot write " + tmp.string()};
  }
  bool ok = ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  std::error_code ec;
  if (ok) {
    std::filesystem::rename(tmp, path, ec);
  }
  if (!ok || ec) {
    return {Code::kIoError, "cannot write " + path.string()};
  }
  return Status::Ok();
}

}  // namespace cuckood::replication
