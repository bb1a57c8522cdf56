#include "cluster/nodes_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cuckood::cluster {
namespace {

storage::Status IoError(const std::string& what, const std::string& path) {
  return {storage::Code::kIoError, what + " '" + path + "': " + std::strerror(errno)};
}

std::string DirOf(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

storage::Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return IoError("cannot write", path);
    }
    done += static_cast<size_t>(n);
  }
  return storage::Status::Ok();
}

}  // namespace

storage::Status WriteNodesFile(const std::string& path, const NodesFileContent& content) {
  std::string text =
      "# cuckood cluster state: node id, topology version and topology as the controller last "
      "pushed them.\n# Written by CLUSTERX commands; do not edit while the server runs.\n";
  text += "format " + std::to_string(kNodesFileFormat) + "\n";
  if (!content.myid.empty()) {
    text += "id " + content.myid + "\n";
  }
  text += "version " + std::to_string(content.version) + "\n";
  std::istringstream lines(content.topology);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty()) {
      text += "node " + line + "\n";
    }
  }
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return IoError("cannot create", tmp);
  }
  auto s = WriteAll(fd, text, tmp);
  if (s.ok() && ::fsync(fd) != 0) {
    s = IoError("cannot fsync", tmp);
  }
  ::close(fd);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = IoError("cannot rename to", path);
  }
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  const std::string dir = DirOf(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return storage::Status::Ok();
}

storage::StatusOr<std::optional<NodesFileContent>> ReadNodesFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) {
      return std::optional<NodesFileContent>();
    }
    return IoError("cannot open", path);
  }
  NodesFileContent content;
  bool format_seen = false;
  bool version_seen = false;
  std::string line;
  int line_no = 0;
  auto bad = [&](const std::string& why) {
    return storage::Status(storage::Code::kCorruption, "nodes file '" + path + "' line " +
                                                           std::to_string(line_no) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') {
      continue;
    }
    const auto sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string value = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "format") {
      if (value != std::to_string(kNodesFileFormat)) {
        return bad("format '" + value + "' is not " + std::to_string(kNodesFileFormat) +
                   " (written by another version of cuckood?)");
      }
      format_seen = true;
    } else if (!format_seen) {
      return bad("the first record must be 'format'");
    } else if (key == "id") {
      content.myid = value;
    } else if (key == "version") {
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || ptr != value.data() + value.size() || v < -1) {
        return bad("bad version '" + value + "'");
      }
      content.version = v;
      version_seen = true;
    } else if (key == "node") {
      content.topology += value + "\n";
    } else {
      return bad("unknown record '" + key + "'");
    }
  }
  if (!format_seen || !version_seen) {
    return bad("missing format or version record");
  }
  return std::optional<NodesFileContent>(std::move(content));
}

}  // namespace cuckood::cluster
