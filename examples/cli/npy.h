// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0), little-endian, for
// the numeric types and bool. Independent of vkdml. Sizes are 64-bit throughout: any shape whose
// bytes fit 2^64, any file size. A file's data is mapped, not copied, and only after its header
// and its size agree; an output is written through a mapping of the file it becomes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace npy {

enum class DType {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  Float32,
  Float64
};

size_t ItemSize(DType t);
const char* DTypeName(DType t);  // NumPy's name: "float32", "bool", ...

// What the reader and PendingFile throw when memory (or address space for a mapping) cannot be
// had: a std::bad_alloc that says what for.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

// Readable zero bytes after every array's data, so a reader may round a read of the data up to
// a multiple of 4 or 8 bytes.
constexpr uint64_t kPadding = 8;

struct Array {
  DType dtype = DType::Float32;
  std::vector<uint64_t> shape;  // empty for a 0-d array
  bool fortranOrder = false;    // data is column-major (as in the file)
  // ByteCount() bytes, then kPadding zero bytes: a mapping of the file read, or memory of the
  // array's own. Shared by copies of the array.
  std::shared_ptr<const uint8_t> data;

  uint64_t ElementCount() const;
  uint64_t ByteCount() const;  // ElementCount() * ItemSize(dtype)
  // Element strides of the data as stored (row-major, or column-major when fortranOrder).
  std::vector<uint64_t> Strides() const;
  // Gives the array zeroed memory of its own for ByteCount() bytes (and the padding); returns it
  // for filling. Throws OutOfMemory when there is not that much memory.
  uint8_t* Allocate();
};

// Copies the array's elements into dst (ByteCount() bytes) in row-major (C) order.
void CopyToCOrder(const Array& a, uint8_t* dst);
// The same array with its data in row-major (C) order, in memory of its own.
Array ToCOrder(const Array& a);

// "(2, 3)", "()", "(4,)": the shape as NumPy prints it.
std::string ShapeString(const std::vector<uint64_t>& shape);

// What a file's header says, and where its data lies.
struct Header {
  DType dtype = DType::Float32;
  std::vector<uint64_t> shape;
  bool fortranOrder = false;
  uint64_t dataOffset = 0;  // bytes of magic, version, HEADER_LEN and header
  uint64_t dataBytes = 0;   // what the shape and dtype need (checked to fit 64 bits)
};

// Parses the header at the start of a file; `bytes` holds the file's first `size` bytes (the
// whole file, or at least its header). Headers longer than kMaxHeaderBytes are refused. On
// failure returns false and sets *error to one line that says what is wrong (field, expected
// versus actual), without the file name.
constexpr uint64_t kMaxHeaderBytes = 1 << 20;
bool ParseHeader(const uint8_t* bytes, uint64_t size, Header* out, std::string* error);
// Whether a file whose data part is `have` bytes matches its header (`more`: a stream that has
// more bytes still, past `have`). Else false with "truncated data: ..." or "trailing data: ...".
bool CheckDataSize(const Header& h, uint64_t have, bool more, std::string* error);
// Parses a whole file held in memory (its data copied into the array).
bool Parse(const uint8_t* bytes, uint64_t size, Array* out, std::string* error);
bool Parse(const std::vector<uint8_t>& bytes, Array* out, std::string* error);
// Reads path: a regular file is mapped (after its header and size are checked, so a file of any
// size costs no memory of its own); a pipe or device is read up to what its header says, and a
// byte more is trailing data. Errors are prefixed with "<path>: ". Throws OutOfMemory when the
// mapping or the memory cannot be had.
bool Read(const std::string& path, Array* out, std::string* error);

// The header bytes (magic through the final '\n', padded so the data starts at a multiple of 64)
// of an array of this dtype, shape and order.
std::string HeaderBytes(DType dtype, const std::vector<uint64_t>& shape, bool fortranOrder);
// The file bytes for an array; Fortran-ordered arrays are written in Fortran order.
std::vector<uint8_t> Serialize(const Array& a);
// Writes `a` to path through a PendingFile.
bool Write(const std::string& path, const Array& a, std::string* error);

// The output file of a command, checked before the work and written after it. A new file or a
// plain file of one name is written as a temporary file in the same directory that Commit
// renames over path (keeping the old file's permissions): on failure or a signal, path is
// untouched and no temporary is left. Where the file system has O_TMPFILE the temporary file
// has no name until Commit links it in, so not even a process killed outright (SIGKILL, or a
// crash inside a driver) leaves one behind. A symbolic link (followed), a device, a FIFO or a file
// with other hard links is written in place by Commit instead, so that it stays what it is.
class PendingFile {
 public:
  explicit PendingFile(std::string path) : path_(std::move(path)) {}
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;
  bool Open(std::string* error);  // checks path, creates the temporary file
  // `size` writable zero bytes that Commit makes the file: the temporary file itself, mapped,
  // with its blocks reserved first (a full disk is an error here, not a fault while writing), or
  // for a file written in place, memory to write from. nullptr and *error on failure; throws
  // OutOfMemory when the memory cannot be had.
  uint8_t* Map(uint64_t size, std::string* error);
  // Makes the first `size` bytes of the mapping (at most Map's size) the file's contents.
  bool Commit(uint64_t size, std::string* error);

 private:
  void Unmap();

  std::string path_, temp_;  // temp_: the temporary file's name (none yet if unnamed_)
  std::string dir_;          // where it is made: path's directory, with its '/'
  bool unnamed_ = false;     // an O_TMPFILE file, linked to a name by Commit
  int fd_ = -1;
  bool inPlace_ = false;
  uint8_t* map_ = nullptr;
  uint64_t mapSize_ = 0;
};

}  // namespace npy
