// Reply encoder for RESP2 and RESP3. Appends to a caller-owned std::string (the connection's
// output buffer), so building a reply allocates only when that buffer grows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cuckood::resp {

class Writer {
 public:
  Writer(std::string* out, int proto) : out_(out), proto_(proto) {}

  int proto() const { return proto_; }
  std::string* buffer() { return out_; }

  void SimpleString(std::string_view s);  // +s\r\n
  void Error(std::string_view msg);       // -msg\r\n (msg without '-'; CR/LF replaced by spaces)
  // The text of the error reply this writer wrote last if it starts at offset pos of the buffer
  // (how the dispatcher learns that a command failed, and with which error), else nullopt.
  std::optional<std::string_view> ErrorAt(size_t pos) const {
    if (error_at_ != pos || pos + 1 + error_len_ > out_->size()) {
      return std::nullopt;
    }
    return std::string_view(*out_).substr(pos + 1, error_len_);
  }
  void Integer(int64_t v);            // :v\r\n
  void Bulk(std::string_view s);      // $len\r\n s\r\n
  void Null();                        // RESP2 $-1\r\n, RESP3 _\r\n
  void NullArray();                   // RESP2 *-1\r\n, RESP3 _\r\n
  void ArrayHeader(int64_t n);        // *n\r\n
  void PushHeader(int64_t n);         // RESP3 >n\r\n (out-of-band data), RESP2 *n\r\n
  void MapHeader(int64_t pairs);      // RESP3 %n\r\n, RESP2 *2n\r\n
  void SetHeader(int64_t n);          // RESP3 ~n\r\n, RESP2 *n\r\n
  void Bool(bool v);                  // RESP3 #t/#f, RESP2 :1/:0
  void Double(double v);              // RESP3 ,v\r\n, RESP2 bulk string (Redis's %.17g form)
  void Verbatim(std::string_view s);  // RESP3 =len\r\ntxt:s\r\n, RESP2 bulk
  void Raw(std::string_view bytes);   // pre-encoded bytes

 private:
  std::string* out_;
  int proto_;
  size_t error_at_ = SIZE_MAX;  // offset of the last error reply written ('-'), SIZE_MAX: none
  size_t error_len_ = 0;        // length of its text
};

}  // namespace cuckood::resp
