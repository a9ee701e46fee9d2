// cli.npy: the command-line tool's .npy reader and writer (examples/cli/npy.h), without a device.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "npy.h"

namespace {

int failures = 0;

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "%s:%d: CHECK(%s)\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                            \
    }                                                                        \
  } while (0)

std::vector<uint8_t> File(int major, const std::string& dict, size_t dataBytes) {
  std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(major), 0};
  size_t lenBytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < lenBytes; ++i) b.push_back(uint8_t(dict.size() >> (8 * i)));
  b.insert(b.end(), dict.begin(), dict.end());
  for (size_t i = 0; i < dataBytes; ++i) b.push_back(uint8_t(i));
  return b;
}

std::string Dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }\n";
}

// An array's data bytes, copied.
std::vector<uint8_t> Bytes(const npy::Array& a) {
  return std::vector<uint8_t>(a.data.get(), a.data.get() + a.ByteCount());
}

// Whether the kPadding bytes after an array's data are readable zeros.
bool PaddedWithZeros(const npy::Array& a) {
  for (uint64_t i = 0; i < npy::kPadding; ++i)
    if (a.data.get()[a.ByteCount() + i] != 0) return false;
  return true;
}

// Parse must fail with a message containing `expect`.
void ExpectError(const std::vector<uint8_t>& bytes, const std::string& expect) {
  npy::Array a;
  std::string error;
  bool ok = npy::Parse(bytes, &a, &error);
  if (ok || error.find(expect) == std::string::npos) {
    std::fprintf(stderr, "expected an error containing \"%s\", got %s \"%s\"\n", expect.c_str(),
                 ok ? "success" : "error", error.c_str());
    ++failures;
  }
}

void RoundTrips() {
  const npy::DType all[] = {npy::DType::Bool,    npy::DType::Int8,    npy::DType::Int16,
                            npy::DType::Int32,   npy::DType::Int64,   npy::DType::UInt8,
                            npy::DType::UInt16,  npy::DType::UInt32,  npy::DType::UInt64,
                            npy::DType::Float16, npy::DType::Float32, npy::DType::Float64};
  const std::vector<std::vector<uint64_t>> shapes = {
      {}, {5}, {2, 3}, {1, 2, 1, 2, 1, 2, 1, 2}, {0}, {3, 0, 2}};
  for (npy::DType t : all) {
    for (const auto& shape : shapes) {
      for (bool fortran : {false, true}) {
        npy::Array a;
        a.dtype = t;
        a.shape = shape;
        a.fortranOrder = fortran;
        uint8_t* data = a.Allocate();
        for (size_t i = 0; i < a.ByteCount(); ++i) data[i] = uint8_t(i * 7 + 1);
        std::vector<uint8_t> bytes = npy::Serialize(a);
        CHECK(bytes[6] == 1);
        size_t headerEnd = 10 + (bytes[8] | bytes[9] << 8);
        CHECK(headerEnd % 64 == 0);
        CHECK(bytes[headerEnd - 1] == '\n');
        npy::Array b;
        std::string error;
        CHECK(npy::Parse(bytes, &b, &error));
        CHECK(error.empty());
        CHECK(b.dtype == t && b.shape == shape && b.fortranOrder == fortran &&
              Bytes(b) == Bytes(a) && PaddedWithZeros(b));
      }
    }
  }
}

void Headers() {
  npy::Array a;
  std::string e;
  // Versions 2.0 and 3.0 have a 4-byte HEADER_LEN; Python 2 wrote longs; keys in any order.
  CHECK(npy::Parse(File(2, Dict("<i8", "(2, 3)"), 48), &a, &e));
  CHECK(a.dtype == npy::DType::Int64 && a.shape == std::vector<uint64_t>({2, 3}));
  CHECK(npy::Parse(File(3, Dict("<u2", "()"), 2), &a, &e));
  CHECK(a.dtype == npy::DType::UInt16 && a.shape.empty() && a.ElementCount() == 1);
  CHECK(
      npy::Parse(File(1, "{'shape': (3L,), \"fortran_order\": False, 'descr': '|b1'}", 3), &a, &e));
  CHECK(a.dtype == npy::DType::Bool && a.shape == std::vector<uint64_t>({3}));
  CHECK(npy::Parse(File(1, Dict("|u1", "(2,)"), 2), &a, &e));
  CHECK(npy::Parse(File(1, Dict("<f2", "(1,1,)"), 2), &a, &e));
  CHECK(a.dtype == npy::DType::Float16);
  CHECK(npy::Parse(File(1, Dict("=f4", "(1,)"), 4), &a, &e));  // native order, little-endian
  CHECK(a.dtype == npy::DType::Float32);
  CHECK(npy::Parse(File(1, Dict("=i8", "(1,)"), 8), &a, &e));
  CHECK(a.dtype == npy::DType::Int64);

  // Strides and the transpose of a Fortran-ordered array.
  CHECK(npy::Parse(File(1, Dict("|i1", "(2, 3)", true), 6), &a, &e));
  CHECK(a.Strides() == std::vector<uint64_t>({1, 2}));
  npy::Array c = npy::ToCOrder(a);
  CHECK(!c.fortranOrder && c.Strides() == std::vector<uint64_t>({3, 1}));
  CHECK(Bytes(c) == std::vector<uint8_t>({0, 2, 4, 1, 3, 5}));
}

void Errors() {
  ExpectError({'N', 'U', 'M', 'P', 'Y'}, "not a .npy file");
  ExpectError({0x93, 'N', 'U', 'M', 'P', 'Y', 1}, "truncated header");
  ExpectError(File(4, Dict("<f4", "(1,)"), 4), "format version is 4.0, expected 1.0, 2.0 or 3.0");
  ExpectError(File(1, Dict(">f4", "(1,)"), 4), "descr is '>f4' (big-endian), expected little");
  ExpectError(File(1, Dict("|O", "(1,)"), 8), "descr is '|O'");
  ExpectError(File(1, Dict("<c8", "(1,)"), 8), "(complex)");
  ExpectError(File(1, Dict("<U3", "(1,)"), 12), "(string)");
  ExpectError(File(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4),
              "structured");
  ExpectError(File(1, Dict("<f4", "(2, 3)"), 20),
              "truncated data: 20 bytes of data, expected 24 (shape (2, 3), float32)");
  ExpectError(File(1, Dict("<f4", "(2,)"), 9), "trailing data: 9 bytes");
  ExpectError(File(1, "{'descr': '<f4', 'shape': (2,), }", 8), "no fortran_order");
  ExpectError(File(1, "{'descr': '<f4', 'fortran_order': False, }", 8), "no shape");
  ExpectError(File(1, "{'fortran_order': False, 'shape': (2,), }", 8), "no descr");
  ExpectError(File(1, Dict("<f4", "(2,)") + "x", 8), "after the closing");
  ExpectError(File(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", 8),
              "fortran_order is not True or False");
  ExpectError(File(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", 8),
              "shape is not a tuple");
  ExpectError(File(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", 8),
              "shape is not a tuple");
  ExpectError(File(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8),
              "unexpected key 'x'");
  ExpectError(File(1, "['descr']", 8), "does not start with '{'");
  // Text from the file is quoted on one line, escaped and cut (found by fuzz_npy).
  ExpectError(File(1, "{'x\ny\xff': 1}", 8), "unexpected key 'x\\ny\\xff', expected only");
  ExpectError(File(1, Dict("<" + std::string(100, 'f'), "(1,)"), 8),
              "descr is '<" + std::string(63, 'f') + "...'");
  ExpectError(File(1, Dict("<f4", "(4294967296, 4294967296)"), 8), "too large");
  // A dimension past 2^64 is an error, not a wrapped size.
  ExpectError(File(1, Dict("<f4", "(18446744073709551617,)"), 4), "shape is not a tuple");
  std::vector<uint8_t> shortHeader = File(1, Dict("<f4", "(2,)"), 0);
  shortHeader.resize(20);
  ExpectError(shortHeader, "truncated header: HEADER_LEN is");
}

void Limits() {
  npy::Header h;
  std::string e;
  // A HEADER_LEN past the limit is refused before anything is copied.
  std::vector<uint8_t> huge = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xFF, 0xFF, 0xFF, 0x7F, '{'};
  CHECK(!npy::ParseHeader(huge.data(), huge.size(), &h, &e));
  CHECK(e ==
        "HEADER_LEN is 2147483647, expected at most 1048576 (a header holds descr, "
        "fortran_order and shape)");
  // More than 2^32 elements is a plain array to the reader: 64-bit sizes throughout.
  std::vector<uint8_t> big = File(1, Dict("|u1", "(8589934592,)"), 0);
  CHECK(npy::ParseHeader(big.data(), big.size(), &h, &e));
  CHECK(h.dataBytes == 8589934592ull && h.dataOffset == big.size());
  CHECK(npy::CheckDataSize(h, 8589934592ull, false, &e));
  CHECK(!npy::CheckDataSize(h, 8589934592ull, true, &e));
  CHECK(e ==
        "trailing data: more than 8589934592 bytes of data, expected 8589934592 (shape "
        "(8589934592,), uint8)");
  CHECK(!npy::CheckDataSize(h, 5, false, &e));
  CHECK(e == "truncated data: 5 bytes of data, expected 8589934592 (shape (8589934592,), uint8)");
  // Dimensions whose product overflows are fine when another one is 0: no bytes.
  std::vector<uint8_t> empty = File(1, Dict("<f8", "(4294967296, 0, 4294967296)"), 0);
  CHECK(npy::ParseHeader(empty.data(), empty.size(), &h, &e) && h.dataBytes == 0);
  ExpectError(File(1, Dict("<f8", "(4294967296, 4294967296)"), 0),
              "shape (4294967296, 4294967296) of float64 is too large: more than 2^64 bytes");
}

// Writes bytes into a file of `size` bytes (sparse past them).
void WriteSparse(const std::string& path, const std::vector<uint8_t>& bytes, uint64_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  CHECK(truncate(path.c_str(), off_t(size)) == 0);
}

// Files far larger than memory cost nothing: the header and size are checked first and the data
// is mapped, not read.
void SparseFiles(const std::string& dir) {
  const std::string path = dir + "/sparse.npy";
  std::string e;
  npy::Array a;
  // A 64 GiB file whose header says (2,) float32: refused by its size alone.
  std::vector<uint8_t> small = File(1, Dict("<f4", "(2,)"), 0);
  WriteSparse(path, small, 64ull << 30);
  CHECK(!npy::Read(path, &a, &e));
  CHECK(e == path + ": trailing data: " + std::to_string((64ull << 30) - small.size()) +
                 " bytes of data, expected 8 (shape (2,), float32)");
  // A header that claims more than the file holds.
  std::vector<uint8_t> claims = File(1, Dict("<f8", "(1099511627776,)"), 0);
  WriteSparse(path, claims, claims.size() + 4096);
  CHECK(!npy::Read(path, &a, &e));
  CHECK(e == path +
                 ": truncated data: 4096 bytes of data, expected 8796093022208 (shape "
                 "(1099511627776,), float64)");
  // 2^33 + 3 elements of uint8 that match their file: mapped, readable to the last byte and
  // past it (the padding).
  const uint64_t n = (1ull << 33) + 3;
  std::vector<uint8_t> header = File(1, Dict("|u1", "(" + std::to_string(n) + ",)"), 0);
  WriteSparse(path, header, header.size() + n);
  CHECK(npy::Read(path, &a, &e));
  CHECK(a.ElementCount() == n && a.ByteCount() == n);
  if (a.data) CHECK(a.data.get()[n - 1] == 0 && PaddedWithZeros(a));
  a = npy::Array();
  std::remove(path.c_str());
}

// Reads a file through a FIFO, written by a child process.
bool ReadThroughFifo(const std::string& fifo, const std::vector<uint8_t>& bytes, npy::Array* a,
                     std::string* e) {
  pid_t child = fork();
  if (child == 0) {
    FILE* f = std::fopen(fifo.c_str(), "wb");
    if (f) {
      std::fwrite(bytes.data(), 1, bytes.size(), f);
      std::fclose(f);
    }
    _exit(0);
  }
  bool ok = npy::Read(fifo, a, e);
  int status = 0;
  waitpid(child, &status, 0);
  return ok;
}

// Pipes and devices: read up to what the header says, then a byte more.
void Streams(const std::string& dir) {
  const std::string fifo = dir + "/fifo.npy";
  CHECK(mkfifo(fifo.c_str(), 0600) == 0);
  npy::Array a;
  std::string e;
  CHECK(ReadThroughFifo(fifo, File(1, Dict("<i2", "(3,)"), 6), &a, &e));
  CHECK(a.shape == std::vector<uint64_t>({3}) &&
        Bytes(a) == std::vector<uint8_t>({0, 1, 2, 3, 4, 5}) && PaddedWithZeros(a));
  CHECK(!ReadThroughFifo(fifo, File(1, Dict("<i2", "(3,)"), 7), &a, &e));
  CHECK(e == fifo + ": trailing data: more than 6 bytes of data, expected 6 (shape (3,), int16)");
  CHECK(!ReadThroughFifo(fifo, File(3, Dict("<i2", "(3,)"), 5), &a, &e));
  CHECK(e == fifo + ": truncated data: 5 bytes of data, expected 6 (shape (3,), int16)");
  CHECK(!ReadThroughFifo(fifo, {0x93, 'N', 'U', 'M'}, &a, &e));
  CHECK(e == fifo + ": not a .npy file: the first bytes are not \\x93NUMPY");
  std::vector<uint8_t> cut = File(2, Dict("<i2", "(3,)"), 0);
  cut.resize(20);
  CHECK(!ReadThroughFifo(fifo, cut, &a, &e));
  CHECK(e.find(fifo + ": truncated header: HEADER_LEN is ") == 0);
  std::remove(fifo.c_str());
  // An endless device is refused by its first bytes.
  CHECK(!npy::Read("/dev/zero", &a, &e));
  CHECK(e == "/dev/zero: not a .npy file: the first bytes are not \\x93NUMPY");
}

size_t CountEntries(const std::string& dir) {
  size_t n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) ++n;
    closedir(d);
  }
  return n;
}

void Files() {
  char tmpl[] = "/tmp/vkdml_npy_test_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string path = dir + "/a.npy", error;
  npy::Array a;
  a.dtype = npy::DType::Int32;
  a.shape = {2};
  const uint8_t values[] = {1, 0, 0, 0, 2, 0, 0, 0};
  std::memcpy(a.Allocate(), values, sizeof values);
  CHECK(npy::Write(path, a, &error));
  npy::Array b;
  CHECK(npy::Read(path, &b, &error) && Bytes(b) == Bytes(a) && PaddedWithZeros(b));
  CHECK(CountEntries(dir) == 1);
  {  // a pending file that is never committed leaves the existing file alone and no temporary;
     // where the file system has O_TMPFILE, its temporary file has no name until Commit
    const int probe = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (probe >= 0) close(probe);
    npy::PendingFile pending(path);
    CHECK(pending.Open(&error));
    CHECK(CountEntries(dir) == (probe >= 0 ? 1 : 2));
  }
  CHECK(CountEntries(dir) == 1);
  CHECK(npy::Read(path, &b, &error) && Bytes(b) == Bytes(a));
  CHECK(!npy::Write(dir + "/missing/b.npy", a, &error));
  CHECK(error.find(dir + "/missing/b.npy: cannot create") == 0);
  CHECK(!npy::Read(dir + "/none.npy", &b, &error));
  CHECK(error == dir + "/none.npy: cannot open: No such file or directory");
  std::ofstream(dir + "/bad.npy") << "hello";
  CHECK(!npy::Read(dir + "/bad.npy", &b, &error));
  CHECK(error.find(dir + "/bad.npy: not a .npy file") == 0);
  std::remove((dir + "/bad.npy").c_str());

  // A mapping bigger than the file (TotalTensorSizeInBytes rounds up): Commit cuts it.
  {
    npy::PendingFile pending(path);
    CHECK(pending.Open(&error));
    uint8_t* p = pending.Map(100, &error);
    CHECK(p != nullptr);
    if (p) std::memset(p, 'x', 100);
    CHECK(pending.Commit(40, &error));
  }
  struct stat st;
  CHECK(stat(path.c_str(), &st) == 0 && st.st_size == 40);
  CHECK(CountEntries(dir) == 1);
  // Written in place: a symbolic link stays one, its target gets the bytes.
  const std::string link = dir + "/link.npy";
  CHECK(symlink(path.c_str(), link.c_str()) == 0);
  CHECK(npy::Write(link, a, &error));
  CHECK(lstat(link.c_str(), &st) == 0 && S_ISLNK(st.st_mode));
  CHECK(npy::Read(path, &b, &error) && Bytes(b) == Bytes(a));
  std::remove(link.c_str());

  SparseFiles(dir);
  Streams(dir);
  std::remove(path.c_str());
  CHECK(CountEntries(dir) == 0);
  rmdir(dir.c_str());
}

}  // namespace

int main() {
  RoundTrips();
  Headers();
  Errors();
  Limits();
  Files();
  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("all npy checks passed\n");
  return 0;
}
