// Encodings follow Redis 7.0's addReply* functions; numbers go through std::to_chars (no locale,
// no iostreams).
#include "resp/writer.h"

#include <charconv>
#include <cmath>

namespace cuckood::resp {
namespace {

constexpr std::string_view kCrlf = "\r\n";

bool IsResp3(int proto) {
  return proto >= 3;
}

// <prefix><v>\r\n in one append.
void AppendLine(std::string* out, char prefix, int64_t v) {
  char buf[1 + 20 + 2];  // INT64_MIN takes 20 characters
  buf[0] = prefix;
  char* end = std::to_chars(buf + 1, buf + 21, v).ptr;
  *end++ = '\r';
  *end++ = '\n';
  out->append(buf, static_cast<size_t>(end - buf));
}

void AppendBulk(std::string* out, std::string_view s) {
  AppendLine(out, '$', static_cast<int64_t>(s.size()));
  out->append(s);
  out->append(kCrlf);
}

}  // namespace

void Writer::SimpleString(std::string_view s) {
  out_->push_back('+');
  out_->append(s);
  out_->append(kCrlf);
}

void Writer::Error(std::string_view msg) {
  error_at_ = out_->size();
  error_len_ = msg.size();
  out_->push_back('-');
  const size_t start = out_->size();
  out_->append(msg);
  // A CR or LF inside the message would end the reply early and desynchronise the client.
  for (size_t i = start; i < out_->size(); ++i) {
    if ((*out_)[i] == '\r' || (*out_)[i] == '\n') {
      (*out_)[i] = ' ';
    }
  }
  out_->append(kCrlf);
}

void Writer::Integer(int64_t v) {
  AppendLine(out_, ':', v);
}

void Writer::Bulk(std::string_view s) {
  AppendBulk(out_, s);
}

void Writer::Null() {
  out_->append(IsResp3(proto_) ? "_\r\n" : "$-1\r\n");
}

void Writer::NullArray() {
  out_->append(IsResp3(proto_) ? "_\r\n" : "*-1\r\n");
}

void Writer::ArrayHeader(int64_t n) {
  AppendLine(out_, '*', n);
}

void Writer::PushHeader(int64_t n) {
  AppendLine(out_, proto_ >= 3 ? '>' : '*', n);
}

void Writer::MapHeader(int64_t pairs) {
  if (IsResp3(proto_)) {
    AppendLine(out_, '%', pairs);
  } else {
    AppendLine(out_, '*', pairs * 2);
  }
}

void Writer::SetHeader(int64_t n) {
  AppendLine(out_, IsResp3(proto_) ? '~' : '*', n);
}

void Writer::Bool(bool v) {
  if (IsResp3(proto_)) {
    out_->append(v ? "#t\r\n" : "#f\r\n");
  } else {
    out_->append(v ? ":1\r\n" : ":0\r\n");
  }
}

void Writer::Double(double v) {
  // Redis 7.0 prints "%.17g", which to_chars(general, 17) reproduces, infinities as "inf" and
  // "-inf"; NaN is "nan" whatever its sign bit (glibc's printf would say "-nan").
  char buf[32];
  std::string_view text;
  if (std::isnan(v)) {
    text = "nan";
  } else {
    char* end = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, 17).ptr;
    text = std::string_view(buf, static_cast<size_t>(end - buf));
  }
  if (IsResp3(proto_)) {
    out_->push_back(',');
    out_->append(text);
    out_->append(kCrlf);
  } else {
    AppendBulk(out_, text);
  }
}

void Writer::Verbatim(std::string_view s) {
  if (!IsResp3(proto_)) {
    AppendBulk(out_, s);
    return;
  }
  AppendLine(out_, '=', static_cast<int64_t>(s.size() + 4));
  out_->append("txt:");
  out_->append(s);
  out_->append(kCrlf);
}

void Writer::Raw(std::string_view bytes) {
  out_->append(bytes);
}

}  // namespace cuckood::resp
