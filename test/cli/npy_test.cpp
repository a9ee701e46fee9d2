// cli.npy: the command-line tool's .npy reader and writer (examples/cli/npy.h), without a device.
#include <dirent.h>
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
        a.data.resize(a.ElementCount() * npy::ItemSize(t));
        for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = uint8_t(i * 7 + 1);
        std::vector<uint8_t> bytes = npy::Serialize(a);
        CHECK(bytes[6] == 1);
        size_t headerEnd = 10 + (bytes[8] | bytes[9] << 8);
        CHECK(headerEnd % 64 == 0);
        CHECK(bytes[headerEnd - 1] == '\n');
        npy::Array b;
        std::string error;
        CHECK(npy::Parse(bytes, &b, &error));
        CHECK(error.empty());
        CHECK(b.dtype == t && b.shape == shape && b.fortranOrder == fortran && b.data == a.data);
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
  CHECK(c.data == std::vector<uint8_t>({0, 2, 4, 1, 3, 5}));
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
  ExpectError(File(1, Dict("<f4", "(4294967296, 4294967296)"), 8), "too large");
  // A dimension past 2^64 is an error, not a wrapped size.
  ExpectError(File(1, Dict("<f4", "(18446744073709551617,)"), 4), "shape is not a tuple");
  std::vector<uint8_t> shortHeader = File(1, Dict("<f4", "(2,)"), 0);
  shortHeader.resize(20);
  ExpectError(shortHeader, "truncated header: HEADER_LEN is");
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
  a.data = {1, 0, 0, 0, 2, 0, 0, 0};
  CHECK(npy::Write(path, a, &error));
  npy::Array b;
  CHECK(npy::Read(path, &b, &error) && b.data == a.data);
  CHECK(CountEntries(dir) == 1);
  {  // a pending file that is never committed leaves the existing file alone and no temporary
    npy::PendingFile pending(path);
    CHECK(pending.Open(&error));
    CHECK(CountEntries(dir) == 2);
  }
  CHECK(CountEntries(dir) == 1);
  CHECK(npy::Read(path, &b, &error) && b.data == a.data);
  CHECK(!npy::Write(dir + "/missing/b.npy", a, &error));
  CHECK(error.find(dir + "/missing/b.npy: cannot create") == 0);
  CHECK(!npy::Read(dir + "/none.npy", &b, &error));
  CHECK(error == dir + "/none.npy: cannot open: No such file or directory");
  std::ofstream(dir + "/bad.npy") << "hello";
  CHECK(!npy::Read(dir + "/bad.npy", &b, &error));
  CHECK(error.find(dir + "/bad.npy: not a .npy file") == 0);
  std::remove((dir + "/bad.npy").c_str());
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

}  // namespace

int main() {
  RoundTrips();
  Headers();
  Errors();
  Files();
  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("all npy checks passed\n");
  return 0;
}
