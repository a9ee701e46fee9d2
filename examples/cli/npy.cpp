#include "npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#ifdef _WIN32  // (MinGW-w64; built, not run, in CI: .ci/other-toolchains.sh)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#define WIN32_LEAN_AND_MEAN
#include <io.h>
#include <process.h>
#include <windows.h>
#else
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>

namespace npy {
namespace {

struct TypeInfo {
  DType dtype;
  char kind;  // NumPy's kind character in descr
  size_t size;
  const char* name;
};

const TypeInfo kTypes[] = {
    {DType::Bool, 'b', 1, "bool"},       {DType::Int8, 'i', 1, "int8"},
    {DType::Int16, 'i', 2, "int16"},     {DType::Int32, 'i', 4, "int32"},
    {DType::Int64, 'i', 8, "int64"},     {DType::UInt8, 'u', 1, "uint8"},
    {DType::UInt16, 'u', 2, "uint16"},   {DType::UInt32, 'u', 4, "uint32"},
    {DType::UInt64, 'u', 8, "uint64"},   {DType::Float16, 'f', 2, "float16"},
    {DType::Float32, 'f', 4, "float32"}, {DType::Float64, 'f', 8, "float64"},
};

const TypeInfo& Info(DType t) {
  return kTypes[static_cast<int>(t)];
}

// Text from a file, for a one-line message: control and non-ASCII bytes escaped (\n, \xff),
// and at most 64 characters of it.
std::string Printable(const std::string& text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= 64) return out + "...";
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n')
      out += "\\n";
    else if (c >= 0x20 && c < 0x7f)
      out += char(c);
    else
      out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
  }
  return out;
}

// Parses the header's Python dict literal: {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }.
class HeaderParser {
 public:
  explicit HeaderParser(std::string text) : s_(std::move(text)) {}

  bool Parse(std::string* descr, bool* fortran, std::vector<uint64_t>* shape, std::string* err) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    SkipSpace();
    if (!Eat('{')) return Fail("header does not start with '{'", err);
    for (;;) {
      SkipSpace();
      if (Eat('}')) break;
      std::string key;
      if (!String(&key)) return Fail("header key is not a quoted string", err);
      SkipSpace();
      if (!Eat(':')) return Fail("header has no ':' after '" + Printable(key) + "'", err);
      SkipSpace();
      if (key == "descr") {
        if (Peek() == '[') return Fail("descr is a structured dtype, expected a plain type", err);
        if (!String(descr)) return Fail("descr is not a quoted string", err);
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (Word("True")) {
          *fortran = true;
        } else if (Word("False")) {
          *fortran = false;
        } else {
          return Fail("fortran_order is not True or False", err);
        }
        haveFortran = true;
      } else if (key == "shape") {
        if (!Tuple(shape)) return Fail("shape is not a tuple of non-negative integers", err);
        haveShape = true;
      } else {
        return Fail("header has an unexpected key '" + Printable(key) +
                        "', expected only descr, fortran_order and shape",
                    err);
      }
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat('}')) break;
      return Fail("header dict is malformed after '" + Printable(key) + "'", err);
    }
    SkipSpace();
    if (pos_ != s_.size()) return Fail("header has text after the closing '}'", err);
    if (!haveDescr) return Fail("header has no descr", err);
    if (!haveFortran) return Fail("header has no fortran_order", err);
    if (!haveShape) return Fail("header has no shape", err);
    return true;
  }

 private:
  static bool Fail(const std::string& msg, std::string* err) {
    *err = msg;
    return false;
  }
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (Peek() == ' ' || Peek() == '\n' || Peek() == '\t' || Peek() == '\r') ++pos_;
  }
  bool Word(const char* w) {
    size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  bool String(std::string* out) {
    char q = Peek();
    if (q != '\'' && q != '"') return false;
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string::npos) return false;
    *out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return true;
  }
  bool Tuple(std::vector<uint64_t>* out) {
    out->clear();
    if (!Eat('(')) return false;
    for (;;) {
      SkipSpace();
      if (Eat(')')) return true;
      if (Peek() < '0' || Peek() > '9') return false;
      uint64_t v = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        uint64_t d = static_cast<uint64_t>(Peek() - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
        ++pos_;
      }
      Eat('L');  // Python 2 longs
      out->push_back(v);
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat(')')) return true;
      return false;
    }
  }

  std::string s_;
  size_t pos_ = 0;
};

bool ParseDescr(const std::string& descr, DType* out, std::string* err) {
  std::string quoted = "descr is '" + Printable(descr) + "'";
  char order = descr.empty() ? '\0' : descr[0], kind = descr.size() > 1 ? descr[1] : '\0';
  std::string sizeText = descr.size() > 2 ? descr.substr(2) : "";
  size_t size = 0;
  if (!sizeText.empty() && sizeText.size() <= 2 &&
      sizeText.find_first_not_of("0123456789") == std::string::npos)
    size = static_cast<size_t>(std::stoul(sizeText));
  for (const TypeInfo& t : kTypes) {
    if (std::strchr("<>|=", order) == nullptr || t.kind != kind || t.size != size) continue;
    if (size > 1 && order != '<' && order != '=') {
      *err = quoted + (order == '>' ? " (big-endian)" : "") + ", expected little-endian ('<" +
             Printable(descr.substr(1)) + "')";
      return false;
    }
    *out = t.dtype;
    return true;
  }
  const char* what = kind == 'c'                    ? " (complex)"
                     : kind == 'O'                  ? " (object)"
                     : kind == 'V'                  ? " (void/structured)"
                     : (kind == 'U' || kind == 'S') ? " (string)"
                                                    : "";
  *err = quoted + what + ", expected bool, int8..int64, uint8..uint64, float16, float32 or float64";
  return false;
}

uint32_t ReadLe(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

[[noreturn]] void ThrowNoMemory(const std::string& what, uint64_t bytes) {
  throw OutOfMemory("cannot have " + std::to_string(bytes) + " bytes of memory for " + what);
}

// Memory that ends in kPadding zero bytes, as an array's data: freed with the last copy.
std::shared_ptr<const uint8_t> NewData(uint64_t bytes, uint8_t** writable) {
  if (bytes > UINT64_MAX - kPadding || bytes + kPadding > SIZE_MAX)
    ThrowNoMemory("an array's data", bytes);
  uint8_t* p = new (std::nothrow) uint8_t[static_cast<size_t>(bytes + kPadding)]();
  if (!p) ThrowNoMemory("an array's data", bytes);
  *writable = p;
  return std::shared_ptr<const uint8_t>(p, std::default_delete<const uint8_t[]>());
}

std::string DataWords(const Header& h) {
  return "(shape " + ShapeString(h.shape) + ", " + DTypeName(h.dtype) + ")";
}

}  // namespace

size_t ItemSize(DType t) {
  return Info(t).size;
}
const char* DTypeName(DType t) {
  return Info(t).name;
}

uint64_t Array::ElementCount() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

uint64_t Array::ByteCount() const {
  return ElementCount() * ItemSize(dtype);
}

std::vector<uint64_t> Array::Strides() const {
  std::vector<uint64_t> strides(shape.size());
  uint64_t step = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    size_t i = fortranOrder ? k : shape.size() - 1 - k;
    strides[i] = step;
    step *= shape[i];
  }
  return strides;
}

uint8_t* Array::Allocate() {
  uint8_t* p = nullptr;
  data = NewData(ByteCount(), &p);
  return p;
}

void CopyToCOrder(const Array& a, uint8_t* dst) {
  const uint64_t item = ItemSize(a.dtype), count = a.ElementCount();
  const uint8_t* src = a.data.get();
  if (!a.fortranOrder || a.shape.size() < 2) {
    if (count) std::memcpy(dst, src, static_cast<size_t>(count * item));
    return;
  }
  const size_t rank = a.shape.size();
  std::vector<uint64_t> from = a.Strides(), pos(rank, 0);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t at = 0;
    for (size_t d = 0; d < rank; ++d) at += pos[d] * from[d];
    std::memcpy(dst + i * item, src + at * item, static_cast<size_t>(item));
    for (size_t d = rank; d-- > 0;) {  // next row-major position
      if (++pos[d] < a.shape[d]) break;
      pos[d] = 0;
    }
  }
}

Array ToCOrder(const Array& a) {
  Array c = a;
  c.fortranOrder = false;
  if (!a.fortranOrder || a.shape.size() < 2) return c;
  CopyToCOrder(a, c.Allocate());
  return c;
}

std::string ShapeString(const std::vector<uint64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

bool ParseHeader(const uint8_t* bytes, uint64_t size, Header* out, std::string* error) {
  static const uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 6 || std::memcmp(bytes, kMagic, 6) != 0) {
    *error = "not a .npy file: the first bytes are not \\x93NUMPY";
    return false;
  }
  if (size < 10) {
    *error = "truncated header: the file is " + std::to_string(size) + " bytes";
    return false;
  }
  int major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    *error = "format version is " + std::to_string(major) + "." + std::to_string(minor) +
             ", expected 1.0, 2.0 or 3.0";
    return false;
  }
  const uint64_t lenBytes = major == 1 ? 2 : 4, start = 8 + lenBytes;
  if (size < start) {
    *error = "truncated header: the file is " + std::to_string(size) + " bytes";
    return false;
  }
  const uint64_t headerLen = ReadLe(bytes + 8, static_cast<int>(lenBytes));
  if (headerLen > kMaxHeaderBytes) {
    *error = "HEADER_LEN is " + std::to_string(headerLen) + ", expected at most " +
             std::to_string(kMaxHeaderBytes) + " (a header holds descr, fortran_order and shape)";
    return false;
  }
  if (size - start < headerLen) {
    *error = "truncated header: HEADER_LEN is " + std::to_string(headerLen) + " but only " +
             std::to_string(size - start) + " bytes follow";
    return false;
  }
  std::string header(reinterpret_cast<const char*>(bytes + start), static_cast<size_t>(headerLen));
  std::string descr;
  Header h;
  if (!HeaderParser(header).Parse(&descr, &h.fortranOrder, &h.shape, error)) return false;
  if (!ParseDescr(descr, &h.dtype, error)) return false;
  // The data's byte size, refusing overflow.
  h.dataBytes = ItemSize(h.dtype);
  for (uint64_t d : h.shape) {
    if (d != 0 && h.dataBytes > UINT64_MAX / d) {
      bool empty = false;
      for (uint64_t e : h.shape) empty = empty || e == 0;
      if (empty) {  // an empty array of any shape has no bytes
        h.dataBytes = 0;
        break;
      }
      *error = "shape " + ShapeString(h.shape) + " of " + DTypeName(h.dtype) +
               " is too large: more than 2^64 bytes";
      return false;
    }
    h.dataBytes *= d;
  }
  h.dataOffset = start + headerLen;
  *out = std::move(h);
  return true;
}

bool CheckDataSize(const Header& h, uint64_t have, bool more, std::string* error) {
  if (have == h.dataBytes && !more) return true;
  *error = have < h.dataBytes
               ? "truncated data: " + std::to_string(have) + " bytes of data, expected " +
                     std::to_string(h.dataBytes) + " " + DataWords(h)
               : "trailing data: " + std::string(more ? "more than " : "") + std::to_string(have) +
                     " bytes of data, expected " + std::to_string(h.dataBytes) + " " + DataWords(h);
  return false;
}

bool Parse(const uint8_t* bytes, uint64_t size, Array* out, std::string* error) {
  Header h;
  if (!ParseHeader(bytes, size, &h, error)) return false;
  if (!CheckDataSize(h, size - h.dataOffset, false, error)) return false;
  Array a;
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.fortranOrder = h.fortranOrder;
  uint8_t* data = a.Allocate();
  if (h.dataBytes) std::memcpy(data, bytes + h.dataOffset, static_cast<size_t>(h.dataBytes));
  *out = std::move(a);
  return true;
}

bool Parse(const std::vector<uint8_t>& bytes, Array* out, std::string* error) {
  return Parse(bytes.data(), bytes.size(), out, error);
}

namespace {

Array FromHeader(const Header& h, std::shared_ptr<const uint8_t> data) {
  Array a;
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.fortranOrder = h.fortranOrder;
  a.data = std::move(data);
  return a;
}

#ifndef _WIN32
// A regular file of `size` bytes: mapped read-only, followed by a page of zeros (the padding).
bool ReadMapped(int fd, uint64_t size, Array* out, std::string* error) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (size > UINT64_MAX - 2 * page) ThrowNoMemory("mapping the file", size);
  const uint64_t span = (size + page - 1) / page * page + page;
  if (span > SIZE_MAX) ThrowNoMemory("mapping the file", size);
  // A zero region, then the file mapped over its start: the bytes past the file's end are zeros
  // whatever its size.
  void* region = mmap(nullptr, static_cast<size_t>(span), PROT_READ,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region == MAP_FAILED) ThrowNoMemory("mapping the file", size);
  std::shared_ptr<uint8_t> mapping(static_cast<uint8_t*>(region),
                                   [span](uint8_t* p) { munmap(p, static_cast<size_t>(span)); });
  if (size && mmap(region, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) ==
                  MAP_FAILED) {
    if (errno == ENOMEM) ThrowNoMemory("mapping the file", size);
    *error = std::string("cannot map: ") + std::strerror(errno);
    return false;
  }
  Header h;
  if (!ParseHeader(mapping.get(), size, &h, error)) return false;
  if (!CheckDataSize(h, size - h.dataOffset, false, error)) return false;
  *out = FromHeader(h, std::shared_ptr<const uint8_t>(mapping, mapping.get() + h.dataOffset));
  return true;
}
#endif

// Reads up to n bytes (fewer only at the end of the stream); false and *error on a read error.
bool ReadUpTo(int fd, uint8_t* to, uint64_t n, uint64_t* got, std::string* error) {
  *got = 0;
  while (*got < n) {
    const uint64_t want = std::min<uint64_t>(n - *got, 1 << 20);
#ifdef _WIN32
    const int r = _read(fd, to + *got, static_cast<unsigned>(want));
#else
    const ssize_t r = read(fd, to + *got, static_cast<size_t>(want));
#endif
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      *error = std::string("read error: ") + std::strerror(errno);
      return false;
    }
    if (r == 0) break;
    *got += static_cast<uint64_t>(r);
  }
  return true;
}

// A pipe, a FIFO or a device: the header first, then at most what it says, then one byte more
// to find trailing data. Memory grows with the bytes that arrive, never past the header's size.
bool ReadStream(int fd, Array* out, std::string* error) {
  std::vector<uint8_t> head(12);
  uint64_t got = 0;
  if (!ReadUpTo(fd, head.data(), 10, &got, error)) return false;
  Header h;
  std::string headError;
  if (got < 10) return ParseHeader(head.data(), got, &h, error);  // says what is missing
  const uint64_t lenBytes = head[6] == 1 ? 2 : 4;
  if (lenBytes == 4) {
    uint64_t more = 0;
    if (!ReadUpTo(fd, head.data() + 10, 2, &more, error)) return false;
    got += more;
  }
  if (got >= 8 + lenBytes && head[6] >= 1 && head[6] <= 3 && head[7] == 0) {
    const uint64_t headerLen = ReadLe(head.data() + 8, static_cast<int>(lenBytes));
    if (headerLen <= kMaxHeaderBytes) {
      head.resize(static_cast<size_t>(8 + lenBytes + headerLen));
      uint64_t more = 0;
      if (!ReadUpTo(fd, head.data() + got, headerLen, &more, error)) return false;
      got += more;
    }
  }
  if (!ParseHeader(head.data(), got, &h, error)) return false;
  std::vector<uint8_t> data;
  uint64_t have = 0;
  while (have < h.dataBytes) {
    const uint64_t target = std::min<uint64_t>(h.dataBytes, std::max<uint64_t>(2 * have, 1 << 20));
    if (target > SIZE_MAX - kPadding) ThrowNoMemory("the data read", target);
    data.resize(static_cast<size_t>(target));
    uint64_t n = 0;
    if (!ReadUpTo(fd, data.data() + have, target - have, &n, error)) return false;
    have += n;
    if (have < target) break;  // the stream ended
  }
  uint8_t extra = 0;
  uint64_t past = 0;
  if (!ReadUpTo(fd, &extra, 1, &past, error)) return false;
  if (!CheckDataSize(h, have, past != 0, error)) return false;
  data.resize(static_cast<size_t>(have + kPadding));  // zeros past the data
  auto holder = std::make_shared<std::vector<uint8_t>>(std::move(data));
  *out = FromHeader(h, std::shared_ptr<const uint8_t>(holder, holder->data()));
  return true;
}

}  // namespace

bool Read(const std::string& path, Array* out, std::string* error) {
#ifdef _WIN32  // every file is read as a stream there (no mapping)
  int fd = _open(path.c_str(), _O_RDONLY | _O_BINARY);
  struct _stat64 st;
  const auto fstat = _fstat64;
  const auto close = _close;
#else
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
#endif
  if (fd < 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  bool ok = false;
  std::string why;
  try {
    if (fstat(fd, &st) != 0)
      why = std::string("cannot stat: ") + std::strerror(errno);
    else if (S_ISDIR(st.st_mode))
      why = std::string("cannot read: ") + std::strerror(EISDIR);
#ifndef _WIN32
    else if (S_ISREG(st.st_mode))
      ok = ReadMapped(fd, static_cast<uint64_t>(st.st_size), out, &why);
#endif
    else
      ok = ReadStream(fd, out, &why);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  if (!ok) *error = path + ": " + why;
  return ok;
}

std::string HeaderBytes(DType dtype, const std::vector<uint64_t>& shape, bool fortranOrder) {
  const TypeInfo& t = Info(dtype);
  std::string dict = std::string("{'descr': '") + (t.size == 1 ? '|' : '<') + t.kind +
                     std::to_string(t.size) +
                     "', 'fortran_order': " + (fortranOrder ? "True" : "False") +
                     ", 'shape': " + ShapeString(shape) + ", }";
  // Pad with spaces so that the data starts at a multiple of 64 bytes; the header ends in '\n'.
  size_t lenBytes = dict.size() + 1 + 10 <= 65535 ? 2 : 4;
  size_t total = 8 + lenBytes + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out = {'\x93', 'N', 'U', 'M', 'P', 'Y', char(lenBytes == 2 ? 1 : 2), 0};
  for (size_t i = 0; i < lenBytes; ++i) out.push_back(char(uint8_t(dict.size() >> (8 * i))));
  return out + dict;
}

std::vector<uint8_t> Serialize(const Array& a) {
  const std::string header = HeaderBytes(a.dtype, a.shape, a.fortranOrder);
  std::vector<uint8_t> out(header.begin(), header.end());
  const uint64_t n = a.ByteCount();
  if (n) out.insert(out.end(), a.data.get(), a.data.get() + n);
  return out;
}

bool Write(const std::string& path, const Array& a, std::string* error) {
  const std::string header = HeaderBytes(a.dtype, a.shape, a.fortranOrder);
  const uint64_t n = a.ByteCount(), total = header.size() + n;
  PendingFile file(path);
  if (!file.Open(error)) return false;
  uint8_t* to = file.Map(total, error);
  if (!to) return false;
  std::memcpy(to, header.data(), header.size());
  if (n) std::memcpy(to + header.size(), a.data.get(), static_cast<size_t>(n));
  return file.Commit(total, error);
}

namespace {

bool WriteAll(int fd, const uint8_t* bytes, uint64_t size) {
  uint64_t done = 0;
  while (done < size) {
    const uint64_t chunk = std::min<uint64_t>(size - done, 1 << 30);
#ifdef _WIN32
    const int n = _write(fd, bytes + done, static_cast<unsigned>(chunk));
#else
    const ssize_t n = write(fd, bytes + done, static_cast<size_t>(chunk));
#endif
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<uint64_t>(n);
  }
  return true;
}

// Writes size bytes to fd and closes it; false and *error (naming path) on failure.
bool WriteAndClose(int fd, const uint8_t* bytes, uint64_t size, const std::string& path,
                   std::string* error) {
  bool ok = WriteAll(fd, bytes, size);
  int saved = errno;
#ifdef _WIN32
  if (_close(fd) != 0 && ok) {
#else
  if (close(fd) != 0 && ok) {
#endif
    ok = false;
    saved = errno;
  }
  if (!ok) *error = path + ": write error: " + std::strerror(saved);
  return ok;
}

// Commit's precondition: Map gave at least size bytes.
bool Mapped(const uint8_t* map, uint64_t mapSize, uint64_t size, const std::string& path,
            std::string* error) {
  if (map && size <= mapSize) return true;
  *error =
      path + ": internal error: Commit without a mapping of " + std::to_string(size) + " bytes";
  return false;
}

}  // namespace

#ifdef _WIN32
// Windows: the contents are written from memory into a new file beside the target, which then
// replaces it.
PendingFile::~PendingFile() {
  Unmap();
  if (fd_ >= 0) _close(fd_);
  if (!temp_.empty()) _unlink(temp_.c_str());
}

void PendingFile::Unmap() {
  std::free(map_);
  map_ = nullptr;
  mapSize_ = 0;
}

bool PendingFile::Open(std::string* error) {
  struct _stat64 st;
  if (_stat64(path_.c_str(), &st) == 0 && (st.st_mode & _S_IFDIR)) {
    *error = path_ + ": is a directory";
    return false;
  }
  for (unsigned attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    temp_ = path_ + ".vkdml-" + std::to_string(_getpid()) + "-" + std::to_string(attempt);
    fd_ = _open(temp_.c_str(), _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY, _S_IREAD | _S_IWRITE);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    *error = path_ + ": cannot create a temporary file beside it: " + std::strerror(errno);
    temp_.clear();
    return false;
  }
  return true;
}

uint8_t* PendingFile::Map(uint64_t size, std::string*) {
  Unmap();
  if (size == 0 || size > SIZE_MAX) ThrowNoMemory(path_ + " (its contents)", size);
  map_ = static_cast<uint8_t*>(std::calloc(static_cast<size_t>(size), 1));
  if (!map_) ThrowNoMemory(path_ + " (its contents)", size);
  mapSize_ = size;
  return map_;
}

bool PendingFile::Commit(uint64_t size, std::string* error) {
  if (!Mapped(map_, mapSize_, size, path_, error)) return false;
  const bool ok = WriteAndClose(fd_, map_, size, path_, error);
  fd_ = -1;
  Unmap();
  if (!ok) return false;
  if (!MoveFileExA(temp_.c_str(), path_.c_str(), MOVEFILE_REPLACE_EXISTING)) {
    *error = path_ + ": cannot rename the temporary file to it (Windows error " +
             std::to_string(GetLastError()) + ")";
    return false;
  }
  temp_.clear();
  return true;
}
#else
namespace {

// The temporary file of the PendingFile that is open, removed if a signal ends the program.
char gTemp[4096];
volatile sig_atomic_t gHaveTemp = 0;

void RemoveTempAndReraise(int sig) {
  if (gHaveTemp) unlink(gTemp);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Creates the temporary file from `pattern` (mkstemp) with the signals that remove it blocked
// until its name is recorded, so that no signal can end the program between the two.
int CreateTracked(std::vector<char>* pattern) {
  static bool installed = false;
  if (!installed) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, RemoveTempAndReraise);
    installed = true;
  }
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, sig);
  sigprocmask(SIG_BLOCK, &block, &old);
  int fd = mkstemp(pattern->data());
  const int saved = errno;
  gHaveTemp = 0;
  if (fd >= 0 && pattern->size() <= sizeof(gTemp)) {
    std::memcpy(gTemp, pattern->data(), pattern->size());
    gHaveTemp = 1;
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return fd;
}

// Gives the unnamed (O_TMPFILE) file fd a temporary name in dir (ending in '/' or empty),
// recorded like CreateTracked's. Through /proc/self/fd, which needs no privilege; false (errno
// set) if that fails for another reason than a name in use.
bool LinkTracked(int fd, const std::string& dir, std::string* name) {
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, sig);
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  for (unsigned attempt = 0; attempt < 100; ++attempt) {
    char suffix[32];
    std::snprintf(
        suffix, sizeof suffix, ".vkdml-%06x",
        unsigned(getpid() * 7919u + attempt * 104729u + unsigned(time(nullptr))) & 0xffffffu);
    *name = dir + suffix;
    if (name->size() >= sizeof(gTemp)) {
      errno = ENAMETOOLONG;
      return false;
    }
    sigprocmask(SIG_BLOCK, &block, &old);
    const bool linked =
        linkat(AT_FDCWD, self.c_str(), AT_FDCWD, name->c_str(), AT_SYMLINK_FOLLOW) == 0;
    const int saved = errno;
    if (linked) {
      std::memcpy(gTemp, name->c_str(), name->size() + 1);
      gHaveTemp = 1;
    }
    sigprocmask(SIG_SETMASK, &old, nullptr);
    if (linked) return true;
    errno = saved;
    if (errno != EEXIST) return false;
  }
  return false;
}

}  // namespace

PendingFile::~PendingFile() {
  Unmap();
  if (fd_ >= 0) close(fd_);
  if (!temp_.empty()) {
    gHaveTemp = 0;
    unlink(temp_.c_str());
  }
}

void PendingFile::Unmap() {
  if (map_) munmap(map_, static_cast<size_t>(mapSize_));
  map_ = nullptr;
  mapSize_ = 0;
}

bool PendingFile::Open(std::string* error) {
  // Only a plain file of one name is replaced by renaming a new file over it. A device, a FIFO,
  // a symbolic link (followed, as np.save does) or a file with other hard links is written in
  // place by Commit, so that it stays what it is.
  struct stat st;
  bool exists = stat(path_.c_str(), &st) == 0;
  struct stat lst;
  bool link = lstat(path_.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
  if (exists && S_ISDIR(st.st_mode)) {
    *error = path_ + ": is a directory";
    return false;
  }
  if (exists && access(path_.c_str(), W_OK) != 0) {
    *error = path_ + ": cannot write: " + std::strerror(errno);
    return false;
  }
  inPlace_ = link || (exists && (!S_ISREG(st.st_mode) || st.st_nlink > 1));
  if (inPlace_) return true;

  size_t slash = path_.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path_.substr(0, slash + 1);
  dir_ = slash == std::string::npos ? "" : dir;
  // An unnamed file where the file system has them (else EOPNOTSUPP, EISDIR or EINVAL): then a
  // named one, removed on failure and on the signals that end the program.
  // Commit names it through /proc/self/fd.
  if (access("/proc/self/fd", X_OK) == 0)
    fd_ = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  unnamed_ = fd_ >= 0;
  if (!unnamed_) {
    std::string name = dir_ + ".vkdml-XXXXXX";
    std::vector<char> buf(name.begin(), name.end());
    buf.push_back('\0');
    fd_ = CreateTracked(&buf);
    if (fd_ < 0) {
      *error = path_ + ": cannot create a temporary file in " + dir + ": " + std::strerror(errno);
      return false;
    }
    temp_ = buf.data();
  }
  if (exists) {  // keep the replaced file's permissions and, where allowed, its owner
    fchmod(fd_, st.st_mode & 07777);
    if (fchown(fd_, st.st_uid, st.st_gid) != 0) {
      // Only root may give a file away; otherwise the new file is the caller's, as it would be.
    }
  } else {
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd_, 0666 & ~mask);
  }
  return true;
}

uint8_t* PendingFile::Map(uint64_t size, std::string* error) {
  Unmap();
  if (size == 0 || size > SIZE_MAX || size > uint64_t(INT64_MAX))
    ThrowNoMemory(path_ + " (its contents)", size);
  if (inPlace_) {  // written by Commit, from memory of its own
    void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) ThrowNoMemory(path_ + " (its contents)", size);
    map_ = static_cast<uint8_t*>(p);
    mapSize_ = size;
    return map_;
  }
  // Reserve the blocks first: a write through the mapping to a full disk would be a SIGBUS.
  if (ftruncate(fd_, 0) != 0 || (errno = posix_fallocate(fd_, 0, off_t(size))) != 0) {
    *error = path_ + ": cannot reserve " + std::to_string(size) + " bytes for it in " +
             (dir_.empty() ? "./" : dir_) + ": " + std::strerror(errno);
    return nullptr;
  }
  void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    if (errno == ENOMEM) ThrowNoMemory(path_ + " (mapping its temporary file)", size);
    *error = path_ + ": cannot map its temporary file: " + std::strerror(errno);
    return nullptr;
  }
  map_ = static_cast<uint8_t*>(p);
  mapSize_ = size;
  return map_;
}

bool PendingFile::Commit(uint64_t size, std::string* error) {
  if (!Mapped(map_, mapSize_, size, path_, error)) return false;
  if (inPlace_) {
    int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
      *error = path_ + ": cannot open for writing: " + std::strerror(errno);
      return false;
    }
    const bool ok = WriteAndClose(fd, map_, size, path_, error);
    Unmap();
    return ok;
  }
  // The mapping's writes reach the file; msync reports an I/O error the kernel met.
  bool ok = msync(map_, static_cast<size_t>(mapSize_), MS_SYNC) == 0;
  int saved = errno;
  Unmap();
  if (ok && ftruncate(fd_, off_t(size)) != 0) {
    ok = false;
    saved = errno;
  }
  if (ok && unnamed_ && !LinkTracked(fd_, dir_, &temp_)) {
    *error = path_ + ": cannot give its temporary file a name in " + (dir_.empty() ? "./" : dir_) +
             ": " + std::strerror(errno);
    temp_.clear();
    close(fd_);
    fd_ = -1;
    return false;
  }
  int rc = close(fd_);
  fd_ = -1;
  if (!ok || rc != 0) {
    *error = path_ + ": write error: " + std::strerror(ok ? errno : saved);
    return false;
  }
  if (rename(temp_.c_str(), path_.c_str()) != 0) {
    *error = path_ + ": cannot rename the temporary file to it: " + std::strerror(errno);
    return false;
  }
  gHaveTemp = 0;
  temp_.clear();
  return true;
}

#endif

}  // namespace npy
