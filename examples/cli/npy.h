// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0), little-endian, for
// the numeric types and bool. Independent of vkdml.
#pragma once

#include <cstddef>
#include <cstdint>
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

struct Array {
  DType dtype = DType::Float32;
  std::vector<uint64_t> shape;  // empty for a 0-d array
  bool fortranOrder = false;    // data is column-major (as in the file)
  std::vector<uint8_t> data;    // ElementCount() * ItemSize(dtype) bytes

  uint64_t ElementCount() const;
  // Element strides of the data as stored (row-major, or column-major when fortranOrder).
  std::vector<uint64_t> Strides() const;
};

// The same array with its data in row-major (C) order.
Array ToCOrder(const Array& a);

// "(2, 3)", "()", "(4,)": the shape as NumPy prints it.
std::string ShapeString(const std::vector<uint64_t>& shape);

// Parses a whole .npy file's bytes. On failure returns false and sets *error to one line that
// says what is wrong (field, expected versus actual), without the file name.
bool Parse(const std::vector<uint8_t>& bytes, Array* out, std::string* error);
// Reads path; errors are prefixed with "<path>: ".
bool Read(const std::string& path, Array* out, std::string* error);

// The file bytes for an array; Fortran-ordered arrays are written in Fortran order.
std::vector<uint8_t> Serialize(const Array& a);
// Writes `a` to path through a PendingFile.
bool Write(const std::string& path, const Array& a, std::string* error);

// The output file of a command, checked before the work and written after it. A new file or a
// plain file of one name is written to a temporary file in the same directory that Commit
// renames over path (keeping the old file's permissions): on failure or a signal, path is
// untouched and no temporary is left. A symbolic link (followed), a device, a FIFO or a file
// with other hard links is written in place by Commit instead, so that it stays what it is.
class PendingFile {
 public:
  explicit PendingFile(std::string path) : path_(std::move(path)) {}
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;
  bool Open(std::string* error);  // checks path, creates the temporary file
  bool Commit(const std::vector<uint8_t>& bytes, std::string* error);

 private:
  std::string path_, temp_;
  int fd_ = -1;
  bool inPlace_ = false;
};

}  // namespace npy
