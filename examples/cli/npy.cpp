#include "npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

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
      if (!Eat(':')) return Fail("header has no ':' after '" + key + "'", err);
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
        return Fail("header has an unexpected key '" + key +
                        "', expected only descr, fortran_order and shape",
                    err);
      }
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat('}')) break;
      return Fail("header dict is malformed after '" + key + "'", err);
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
  std::string quoted = "descr is '" + descr + "'";
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
             descr.substr(1) + "')";
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

Array ToCOrder(const Array& a) {
  Array c = a;
  c.fortranOrder = false;
  if (!a.fortranOrder || a.shape.size() < 2) return c;
  size_t item = ItemSize(a.dtype), rank = a.shape.size();
  std::vector<uint64_t> from = a.Strides(), pos(rank, 0);
  uint64_t count = a.ElementCount();
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t src = 0;
    for (size_t d = 0; d < rank; ++d) src += pos[d] * from[d];
    std::memcpy(&c.data[i * item], &a.data[src * item], item);
    for (size_t d = rank; d-- > 0;) {  // next row-major position
      if (++pos[d] < a.shape[d]) break;
      pos[d] = 0;
    }
  }
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

bool Parse(const std::vector<uint8_t>& bytes, Array* out, std::string* error) {
  static const uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (bytes.size() < 6 || std::memcmp(bytes.data(), kMagic, 6) != 0) {
    *error = "not a .npy file: the first bytes are not \\x93NUMPY";
    return false;
  }
  if (bytes.size() < 10) {
    *error = "truncated header: the file is " + std::to_string(bytes.size()) + " bytes";
    return false;
  }
  int major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    *error = "format version is " + std::to_string(major) + "." + std::to_string(minor) +
             ", expected 1.0, 2.0 or 3.0";
    return false;
  }
  size_t lenBytes = major == 1 ? 2 : 4;
  size_t start = 8 + lenBytes;
  if (bytes.size() < start) {
    *error = "truncated header: the file is " + std::to_string(bytes.size()) + " bytes";
    return false;
  }
  size_t headerLen = ReadLe(bytes.data() + 8, static_cast<int>(lenBytes));
  if (bytes.size() - start < headerLen) {
    *error = "truncated header: HEADER_LEN is " + std::to_string(headerLen) + " but only " +
             std::to_string(bytes.size() - start) + " bytes follow";
    return false;
  }
  std::string header(bytes.begin() + static_cast<std::ptrdiff_t>(start),
                     bytes.begin() + static_cast<std::ptrdiff_t>(start + headerLen));
  std::string descr;
  Array a;
  if (!HeaderParser(header).Parse(&descr, &a.fortranOrder, &a.shape, error)) return false;
  if (!ParseDescr(descr, &a.dtype, error)) return false;
  // Element count and byte size, refusing overflow.
  uint64_t bytesNeeded = ItemSize(a.dtype);
  for (uint64_t d : a.shape) {
    if (d != 0 && bytesNeeded > UINT64_MAX / d) {
      *error = "shape " + ShapeString(a.shape) + " is too large";
      return false;
    }
    bytesNeeded *= d;
  }
  size_t dataStart = start + headerLen;
  uint64_t have = bytes.size() - dataStart;
  if (have != bytesNeeded) {
    *error = std::string(have < bytesNeeded ? "truncated data" : "trailing data") + ": " +
             std::to_string(have) + " bytes of data, expected " + std::to_string(bytesNeeded) +
             " (shape " + ShapeString(a.shape) + ", " + DTypeName(a.dtype) + ")";
    return false;
  }
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(dataStart), bytes.end());
  *out = std::move(a);
  return true;
}

bool Read(const std::string& path, Array* out, std::string* error) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::vector<uint8_t> bytes;
  struct stat st;
  if (fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      close(fd);
      *error = path + ": cannot read: " + std::strerror(EISDIR);
      return false;
    }
    if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<size_t>(st.st_size));
  }
  uint8_t chunk[1 << 16];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = path + ": read error: " + std::strerror(errno);
      close(fd);
      return false;
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  close(fd);
  if (!Parse(bytes, out, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

std::vector<uint8_t> Serialize(const Array& a) {
  const TypeInfo& t = Info(a.dtype);
  std::string dict = std::string("{'descr': '") + (t.size == 1 ? '|' : '<') + t.kind +
                     std::to_string(t.size) +
                     "', 'fortran_order': " + (a.fortranOrder ? "True" : "False") +
                     ", 'shape': " + ShapeString(a.shape) + ", }";
  // Pad with spaces so that the data starts at a multiple of 64 bytes; the header ends in '\n'.
  size_t lenBytes = dict.size() + 1 + 10 <= 65535 ? 2 : 4;
  size_t total = 8 + lenBytes + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(lenBytes == 2 ? 1 : 2), 0};
  for (size_t i = 0; i < lenBytes; ++i) out.push_back(uint8_t(dict.size() >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), a.data.begin(), a.data.end());
  return out;
}

bool Write(const std::string& path, const Array& a, std::string* error) {
  PendingFile file(path);
  return file.Open(error) && file.Commit(Serialize(a), error);
}

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

bool WriteAll(int fd, const std::vector<uint8_t>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

PendingFile::~PendingFile() {
  if (fd_ >= 0) close(fd_);
  if (!temp_.empty()) {
    gHaveTemp = 0;
    unlink(temp_.c_str());
  }
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
  std::string name = (slash == std::string::npos ? "" : dir) + ".vkdml-XXXXXX";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  fd_ = CreateTracked(&buf);
  if (fd_ < 0) {
    *error = path_ + ": cannot create a temporary file in " + dir + ": " + std::strerror(errno);
    return false;
  }
  temp_ = buf.data();
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

bool PendingFile::Commit(const std::vector<uint8_t>& bytes, std::string* error) {
  if (inPlace_) {
    int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
      *error = path_ + ": cannot open for writing: " + std::strerror(errno);
      return false;
    }
    bool ok = WriteAll(fd, bytes);
    int saved = errno;
    if (close(fd) != 0 && ok) {
      ok = false;
      saved = errno;
    }
    if (!ok) *error = path_ + ": write error: " + std::strerror(saved);
    return ok;
  }
  bool ok = WriteAll(fd_, bytes);
  int saved = errno;
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

}  // namespace npy
