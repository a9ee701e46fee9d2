// libFuzzer target: the .npy reader (examples/cli/npy.h). Each input is read as a whole file
// three ways: parsed from memory, read from a memfd (a regular file: mapped) and from a pipe (a
// stream: read up to what the header says). All three must agree: the same array, or the same
// one-line error (a stream says "more than N bytes" of trailing data it did not read to the end).
// An array read must survive Serialize and Parse unchanged, its C-order copy must hold the same
// multiset of elements, and the bytes after its data must read as zeros.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "npy.h"

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "fuzz_npy: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

std::vector<uint8_t> Bytes(const npy::Array& a) {
  return std::vector<uint8_t>(a.data.get(), a.data.get() + a.ByteCount());
}

bool Same(const npy::Array& a, const npy::Array& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.fortranOrder == b.fortranOrder &&
         Bytes(a) == Bytes(b);
}

void CheckArray(const npy::Array& a, const char* how) {
  for (uint64_t i = 0; i < npy::kPadding; ++i)
    if (a.data.get()[a.ByteCount() + i] != 0) Die(std::string(how) + ": padding is not zero");
}

// The file read through a path: a memfd (mapped) or a pipe (a stream).
bool ReadVia(bool pipe, const uint8_t* data, size_t size, npy::Array* a, std::string* error) {
  int fds[2] = {-1, -1};
  std::thread writer;
  if (pipe) {
    if (::pipe(fds) != 0) Die("pipe");
    writer = std::thread([&] {
      size_t done = 0;
      while (done < size) {
        ssize_t n = write(fds[1], data + done, size - done);
        if (n <= 0) break;  // the reader stopped (EPIPE): it read what it needed
        done += size_t(n);
      }
      close(fds[1]);
    });
  } else {
    fds[0] = memfd_create("fuzz_npy", 0);
    if (fds[0] < 0 || (size && write(fds[0], data, size) != ssize_t(size))) Die("memfd");
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
  bool ok = npy::Read(path, a, error);
  if (!ok) error->erase(0, path.size() + 2);  // "<path>: "
  close(fds[0]);                              // a writer still blocked on a full pipe gets EPIPE
  if (writer.joinable()) writer.join();
  return ok;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  signal(SIGPIPE, SIG_IGN);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  npy::Array parsed, mapped, streamed;
  std::string e1, e2, e3;
  const bool ok = npy::Parse(data, size, &parsed, &e1);
  const bool okMapped = ReadVia(false, data, size, &mapped, &e2);
  const bool okStreamed = ReadVia(true, data, size, &streamed, &e3);
  if (ok != okMapped || ok != okStreamed)
    Die("the readers disagree: parse '" + e1 + "', mapped '" + e2 + "', stream '" + e3 + "'");
  if (!ok) {
    if (e1.empty() || e1.find('\n') != std::string::npos) Die("error not one line: " + e1);
    if (e2 != e1) Die("mapped: '" + e2 + "', parsed: '" + e1 + "'");
    const bool trailing = e1.rfind("trailing data: ", 0) == 0;
    if (trailing ? e3.rfind("trailing data: more than ", 0) != 0 : e3 != e1)
      Die("stream: '" + e3 + "', parsed: '" + e1 + "'");
    npy::Header h;
    if (npy::ParseHeader(data, size, &h, &e1) && h.dataOffset + h.dataBytes == size)
      Die("Parse refused a file whose header and size agree");
    return 0;
  }
  if (!Same(parsed, mapped) || !Same(parsed, streamed)) Die("the readers read different arrays");
  CheckArray(parsed, "parsed");
  CheckArray(mapped, "mapped");
  CheckArray(streamed, "streamed");
  npy::Header h;
  if (!npy::ParseHeader(data, size, &h, &e1) || h.dataOffset + h.dataBytes != size)
    Die("ParseHeader disagrees with Parse");

  // Written and read back: the same array.
  const std::vector<uint8_t> file = npy::Serialize(parsed);
  npy::Array again;
  if (!npy::Parse(file, &again, &e1) || !Same(parsed, again)) Die("Serialize round trip: " + e1);
  if (file.size() != npy::HeaderBytes(parsed.dtype, parsed.shape, parsed.fortranOrder).size() +
                         parsed.ByteCount() ||
      (file.size() - parsed.ByteCount()) % 64 != 0)
    Die("Serialize: the data does not start at a multiple of 64");

  // C order: the same elements, rearranged (and the same bytes when already in C order).
  const npy::Array c = npy::ToCOrder(parsed);
  const size_t item = npy::ItemSize(parsed.dtype);
  std::vector<std::string> before, after;
  for (uint64_t i = 0; i < parsed.ElementCount(); ++i) {
    before.emplace_back(reinterpret_cast<const char*>(parsed.data.get() + i * item), item);
    after.emplace_back(reinterpret_cast<const char*>(c.data.get() + i * item), item);
  }
  std::sort(before.begin(), before.end());
  std::sort(after.begin(), after.end());
  if (c.fortranOrder || before != after) Die("ToCOrder changed the elements");
  if (!parsed.fortranOrder && Bytes(c) != Bytes(parsed)) Die("ToCOrder moved a C-order array");
  return 0;
}
