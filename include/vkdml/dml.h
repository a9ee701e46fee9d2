// vkdml: DirectML's descriptor structs and enums, with DirectML's names, fields, field order and
// numeric values. They live in namespace vkdml so a real directml.h can share the program.
// Porting code written against DirectML: change the include, add `using namespace vkdml;` (or
// qualify), and create a vkdml::Device instead of an IDMLDevice.
#pragma once

#include <cstdint>

#include <vulkan/vulkan_core.h>

namespace vkdml {

typedef uint32_t UINT;
typedef uint64_t UINT64;
typedef int BOOL;  // Windows' BOOL: vkdml writes 0 or 1

// Every enum that is a field of a struct has a fixed underlying type (UINT, vkdml's addition:
// DirectML's enums leave it to the compiler), so any 32-bit value a caller stores in a field is a
// valid value of its type and vkdml can refuse it by number; DirectML's names and values are
// unchanged.
enum DML_TENSOR_DATA_TYPE : UINT {
  DML_TENSOR_DATA_TYPE_UNKNOWN = 0,
  DML_TENSOR_DATA_TYPE_FLOAT32 = 1,
  DML_TENSOR_DATA_TYPE_FLOAT16 = 2,
  DML_TENSOR_DATA_TYPE_UINT32 = 3,
  DML_TENSOR_DATA_TYPE_UINT16 = 4,
  DML_TENSOR_DATA_TYPE_UINT8 = 5,
  DML_TENSOR_DATA_TYPE_INT32 = 6,
  DML_TENSOR_DATA_TYPE_INT16 = 7,
  DML_TENSOR_DATA_TYPE_INT8 = 8,
  DML_TENSOR_DATA_TYPE_FLOAT64 = 9,
  DML_TENSOR_DATA_TYPE_UINT64 = 10,
  DML_TENSOR_DATA_TYPE_INT64 = 11,
};

enum DML_TENSOR_FLAGS : UINT {
  DML_TENSOR_FLAG_NONE = 0x0,
  DML_TENSOR_FLAG_OWNED_BY_DML = 0x1,  // accepted and ignored: vkdml never owns tensor memory
  // vkdml's own: the tensor may have 2^32 or more elements (DirectML stops at 2^32 - 1; without
  // this flag vkdml does too). Sizes and Strides stay 32-bit each, so a tensor whose packed
  // strides would pass 2^32 - 1 needs its Strides given (and cannot have them packed); at most
  // 2^56 elements. vkdml::CalcLargeBufferTensorSize gives its TotalTensorSizeInBytes.
  VKDML_TENSOR_FLAG_LARGE = 0x10000,
};

// Strides are in elements and optional (nullptr = packed, row-major); a stride of 0 broadcasts.
// TotalTensorSizeInBytes must be at least the size the sizes and strides span (see
// vkdml::CalcBufferTensorSize), and GuaranteedBaseOffsetAlignment is 0 or a power of two that
// every binding offset of this tensor is a multiple of.
struct DML_BUFFER_TENSOR_DESC {
  DML_TENSOR_DATA_TYPE DataType;
  DML_TENSOR_FLAGS Flags;
  UINT DimensionCount;
  const UINT* Sizes;
  const UINT* Strides;
  UINT64 TotalTensorSizeInBytes;
  UINT GuaranteedBaseOffsetAlignment;
};

enum DML_TENSOR_TYPE : UINT {
  DML_TENSOR_TYPE_INVALID = 0,
  DML_TENSOR_TYPE_BUFFER = 1,
};

struct DML_TENSOR_DESC {
  DML_TENSOR_TYPE Type;
  const void* Desc;  // const DML_BUFFER_TENSOR_DESC*
};

// The operator types vkdml knows, with DirectML's values.
enum DML_OPERATOR_TYPE : UINT {
  DML_OPERATOR_INVALID = 0,
  DML_OPERATOR_GATHER = 67,
  DML_OPERATOR_SCATTER_ELEMENTS = 94,
  DML_OPERATOR_SCATTER = DML_OPERATOR_SCATTER_ELEMENTS,
  DML_OPERATOR_GATHER_ELEMENTS = 107,
  DML_OPERATOR_GATHER_ND = 108,
  DML_OPERATOR_SCATTER_ND = 109,
  DML_OPERATOR_GATHER_ND1 = 140,
  // vkdml's own (not DirectML's): the scatters with a reduction, below.
  VKDML_OPERATOR_SCATTER_ND_REDUCE = 0x10001,
  VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE = 0x10002,
  VKDML_OPERATOR_OUT_OF_RANGE = 0x10003,            // VKDML_OUT_OF_RANGE_OPERATOR_DESC
  VKDML_OPERATOR_GATHER_QUANTIZED_ROWS = 0x10004,   // VKDML_GATHER_QUANTIZED_ROWS_OPERATOR_DESC
  VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS = 0x10005,  // VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC
  VKDML_OPERATOR_EMBEDDING_BAG = 0x10006,           // VKDML_EMBEDDING_BAG_OPERATOR_DESC
  VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED = 0x10007,  // VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC
  // vkdml's own: a paged KV cache (vLLM's reshape_and_cache_flash and gather_cache).
  VKDML_OPERATOR_PAGED_CACHE_WRITE = 0x10008,  // VKDML_PAGED_CACHE_WRITE_OPERATOR_DESC
  VKDML_OPERATOR_PAGED_GATHER = 0x10009,       // VKDML_PAGED_GATHER_OPERATOR_DESC
  VKDML_OPERATOR_MOE_PERMUTE = 0x10010,        // VKDML_MOE_PERMUTE_OPERATOR_DESC
  VKDML_OPERATOR_MOE_UNPERMUTE = 0x10011,      // VKDML_MOE_UNPERMUTE_OPERATOR_DESC
  VKDML_OPERATOR_SEGMENT_REDUCE = 0x10018,     // VKDML_SEGMENT_REDUCE_OPERATOR_DESC
};

struct DML_OPERATOR_DESC {
  DML_OPERATOR_TYPE Type;
  const void* Desc;  // the DML_*_OPERATOR_DESC matching Type
};

// DirectML's DML_OPERATOR_GATHER: output[...] = input[..., indices[...], ...] along Axis, the
// last IndexDimensions sizes of IndicesTensor taking the place of InputTensor's Axis dimension.
struct DML_GATHER_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT Axis;
  UINT IndexDimensions;
};

struct DML_GATHER_ELEMENTS_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT Axis;
};

struct DML_GATHER_ND_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT InputDimensionCount;
  UINT IndicesDimensionCount;
};

struct DML_GATHER_ND1_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT InputDimensionCount;
  UINT IndicesDimensionCount;
  UINT BatchDimensionCount;
};

struct DML_SCATTER_ND_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* UpdatesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT InputDimensionCount;
  UINT IndicesDimensionCount;
};

// DirectML's DML_OPERATOR_SCATTER_ELEMENTS (alias DML_OPERATOR_SCATTER): output = input, then
// output[..., indices[i, j, ...], ...] = updates[i, j, ...] along Axis. The target of two update
// elements may coincide; then one of them is written, which one is unspecified.
struct DML_SCATTER_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* UpdatesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT Axis;
};
typedef DML_SCATTER_OPERATOR_DESC DML_SCATTER_ELEMENTS_OPERATOR_DESC;

// vkdml's extension beyond DirectML: scatters that combine each update with the element it
// targets (ONNX's ScatterND / ScatterElements `reduction`, PyTorch's index_add_, scatter_add_,
// scatter_reduce_). output = input; then, for each update u in turn,
// output[target] = f(output[target], u). Each step is computed in the tensor's own data type:
// integers wrap modulo 2^bits, floats round to nearest even (float16 too, with no wider
// accumulator; a NaN result of ADD or MULTIPLY has unspecified bits, as IEEE 754 leaves them),
// MAX and MIN propagate NaN as NumPy's maximum/minimum do
// (f(x, u) = x if x is NaN or x >= u (x <= u for MIN), else u). By default the updates of one
// target are applied in any order: integer results are then exact, float MAX and MIN exact up to
// which of equal values stays (+0 or -0, which NaN), and float ADD and MULTIPLY may differ from
// a sequential result by the order of the steps. Compiled with
// VKDML_EXECUTION_FLAG_DETERMINISTIC, they are applied in the row-major order of IndicesTensor,
// bit for bit (README: Scatter reductions). ExcludeSelf (PyTorch's scatter_reduce with
// include_self=False): each element some update targets starts from f's identity instead of its
// input value (ADD +0, MULTIPLY 1, MAX -infinity or the type's least value, MIN +infinity or its
// greatest), as PyTorch's does; the others keep their input value. 0 or 1; 0 with NONE.
enum VKDML_REDUCE_FUNCTION : UINT {
  VKDML_REDUCE_FUNCTION_NONE = 0,  // the update replaces the element, as DirectML's scatters do
  VKDML_REDUCE_FUNCTION_ADD = 1,
  VKDML_REDUCE_FUNCTION_MULTIPLY = 2,
  VKDML_REDUCE_FUNCTION_MAX = 3,
  VKDML_REDUCE_FUNCTION_MIN = 4,
  // PyTorch's scatter_reduce "mean": each element some update targets becomes (its input value,
  // unless ExcludeSelf, plus its updates, summed as ADD sums them) divided by their number, once:
  // floats rounded to nearest even, integers rounded toward negative infinity. The others keep
  // their input value.
  VKDML_REDUCE_FUNCTION_MEAN = 5,
};

// DML_SCATTER_ND_OPERATOR_DESC with a ReduceFunction (VKDML_OPERATOR_SCATTER_ND_REDUCE).
struct VKDML_SCATTER_ND_REDUCE_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* UpdatesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT InputDimensionCount;
  UINT IndicesDimensionCount;
  VKDML_REDUCE_FUNCTION ReduceFunction;
  BOOL ExcludeSelf;
};

// DML_SCATTER_OPERATOR_DESC with a ReduceFunction (VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE).
struct VKDML_SCATTER_ELEMENTS_REDUCE_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* UpdatesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT Axis;
  VKDML_REDUCE_FUNCTION ReduceFunction;
  BOOL ExcludeSelf;
};

// DirectML's DML_SCALAR_UNION: one value of any data type, in its first DataTypeSize bytes
// (FLOAT16: its IEEE binary16 bits, in UInt16).
union DML_SCALAR_UNION {
  uint8_t Bytes[8];
  int8_t Int8;
  uint8_t UInt8;
  int16_t Int16;
  uint16_t UInt16;
  int32_t Int32;
  uint32_t UInt32;
  int64_t Int64;
  uint64_t UInt64;
  float Float32;
  double Float64;
};

// vkdml's own: what an out-of-range index component does. A component addressing a dimension of
// size n is in range in [-n, n - 1] for INT32 and INT64 indices (a negative one counts from the
// end) and in [0, n - 1] for UINT32 and UINT64 ones. Every component of an index tuple is checked
// against its own dimension; one out of range makes the whole tuple so (GatherND: its slice).
enum VKDML_OUT_OF_RANGE_MODE : UINT {
  VKDML_OUT_OF_RANGE_MODE_CLAMP = 0,  // DirectML's: the component is clamped into range
  VKDML_OUT_OF_RANGE_MODE_FILL = 1,   // gathers: the output element is FillValue (embedding bags:
                                      // the entry's row is FillValues)
  VKDML_OUT_OF_RANGE_MODE_DROP = 2,   // scatters: the update element is skipped (embedding bags:
                                      // the entry)
  // As CLAMP, and every execution checked as VKDML_EXECUTION_FLAG_CHECK_INDICES does:
  // BindingTable::IndexStatus and Device::Run return Status::IndexOutOfRange.
  VKDML_OUT_OF_RANGE_MODE_ERROR = 3,
};

// vkdml's own (VKDML_OPERATOR_OUT_OF_RANGE): Operator, any other operator of this header, with
// Mode in place of DirectML's clamp. FillValue (FILL) holds an element of OutputTensor's
// DataType; its bytes past that type's size, and all of it in the other modes, must be 0.
// Checked executions report an out-of-range index in every mode (FILL and DROP still fill or
// skip it). FILL and DROP run on every device and data type, in the kernels CLAMP takes (README:
// Semantics).
struct VKDML_OUT_OF_RANGE_OPERATOR_DESC {
  const DML_OPERATOR_DESC* Operator;
  VKDML_OUT_OF_RANGE_MODE Mode;
  DML_SCALAR_UNION FillValue;
};

// vkdml's own: the block layouts of quantized tables (ggml's). Each row is whole blocks of 32
// values, stored one after another, little-endian:
//   Q8_0: 34 bytes, a float16 scale d, then 32 int8 q; value i is d * q[i].
//   Q4_0: 18 bytes, a float16 scale d, then 16 bytes b; value i is d * ((b[i] & 15) - 8) for
//         i < 16 and d * ((b[i - 16] >> 4) - 8) for the others.
enum VKDML_QUANTIZED_FORMAT : UINT {
  VKDML_QUANTIZED_FORMAT_Q8_0 = 1,
  VKDML_QUANTIZED_FORMAT_Q4_0 = 2,
};

// vkdml's own (VKDML_OPERATOR_GATHER_QUANTIZED_ROWS; ggml's get_rows, PyTorch's embedding over a
// quantized table): output[..., :] = the values of row indices[..., 0] of InputTensor, each
// d * q computed in float32 (a single rounding) and rounded to nearest even for FLOAT16. Rank D
// from 2 to 8 for all three tensors:
//   InputTensor   UINT8 {1, ..., 1, rows, bytes per row}: Format's blocks; Strides, if given,
//                 with a last stride of 1 (a row stride may be any number of bytes);
//   IndicesTensor INT32, INT64, UINT32 or UINT64 {n0, ..., n(D-2), 1}, any strides; an index
//                 out of [-rows, rows - 1] (signed) or [0, rows - 1] is clamped, as DirectML's
//                 gathers do (VKDML_OPERATOR_OUT_OF_RANGE wraps it for FILL or ERROR);
//   OutputTensor  FLOAT32 or FLOAT16 {n0, ..., n(D-2), 32 * blocks per row} with a last stride
//                 of 1 and (FLOAT16) even strides.
// Every binding offset of its tensors is a multiple of 4 bytes (the kernel reads and writes
// 32-bit words, on any device: no 8/16-bit storage needed). A NaN or infinite scale gives NaN
// or infinities, their NaN bits unspecified.
struct VKDML_GATHER_QUANTIZED_ROWS_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  VKDML_QUANTIZED_FORMAT Format;
};

// vkdml's own (VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS; ggml's set_rows into a quantized table,
// e.g. a KV cache): output = input; then row indices[..., 0] of OutputTensor becomes
// UpdatesTensor's row [..., :] quantized, the later index in IndicesTensor's row-major order
// winning where two name one row (as ggml's CPU set_rows, run in order). Each block of 32 values
// x is quantized as ggml's reference quantizer does, in float32, bit for bit:
//   Q8_0: amax = max |x|, d = amax / 127, id = d ? 1 / d : 0, q = roundf(x * id) (halves away
//         from zero);
//   Q4_0: max = the x of largest magnitude (the first on ties), d = max / -8,
//         id = d ? 1 / d : 0, q = min(15, trunc(x * id + 8.5f));
// d stored as float16 (to nearest even). Each division and product is rounded once, as IEEE
// float32 does it, denormals kept, on every device. Updates must be finite; a block whose 1 / d
// overflows float32 (d about 2^-128 or less, where C's conversion of the infinite product to an
// integer is undefined) stores q = 0 (Q4_0: 8, the value 0).
// Rank D from 2 to 8 for all four tensors:
//   InputTensor   UINT8 {1, ..., 1, rows, bytes per row} (as VKDML_GATHER_QUANTIZED_ROWS');
//   IndicesTensor {n0, ..., n(D-2), 1}, any index type and strides; out-of-range indices are
//                 clamped (VKDML_OPERATOR_OUT_OF_RANGE wraps it for DROP or ERROR);
//   UpdatesTensor FLOAT32 {n0, ..., n(D-2), 32 * blocks per row}, a last stride of 1;
//   OutputTensor  UINT8, InputTensor's sizes, a last stride of 1; may be bound where InputTensor
//                 is (in place: only the indexed rows are written).
// Every binding offset is a multiple of 4 bytes.
struct VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* UpdatesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  VKDML_QUANTIZED_FORMAT Format;
};

// vkdml's own: the values of a block-quantized tensor, as ONNX Runtime's GatherBlockQuantized
// takes them (its data type T1 and attribute `bits`). 4-bit values are two a byte, the first in
// the low nibble. Each names the zero point used where no ZeroPointTensor is given.
enum VKDML_BLOCK_QUANTIZED_TYPE : UINT {
  VKDML_BLOCK_QUANTIZED_TYPE_INT4 = 1,         // int4: -8 to 7; zero point 0
  VKDML_BLOCK_QUANTIZED_TYPE_UINT4 = 2,        // uint4: 0 to 15; zero point 0
  VKDML_BLOCK_QUANTIZED_TYPE_UINT8_BITS4 = 3,  // uint8 with bits 4: uint4's values; zero point 8
  VKDML_BLOCK_QUANTIZED_TYPE_UINT8 = 4,        // uint8 with bits 8: 0 to 255; zero point 128
};

// vkdml's own (VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED; ONNX Runtime's com.microsoft.
// GatherBlockQuantized): DML_OPERATOR_GATHER (Axis, IndexDimensions and the shapes as its) over
// the values of InputTensor, each value v dequantized on the way: (v - zero point) * scale,
// computed in float32 with one rounding (denormals kept, on every device) and rounded to nearest
// even for FLOAT16. Value c (coordinates in the values' shape) takes the scale and zero point of
// its block: c with c[QuantizeAxis] divided by BlockSize (a power of 2, at least 16, as ONNX
// Runtime's). Rank D from 1 to 8 for all tensors:
//   InputTensor     UINT8, packed (Strides null or row-major). ValueSizes null: the values'
//                   sizes, but (4-bit types) the last size counts bytes: a row of the last
//                   dimension holds 2 values a byte (ONNX's int4 and uint4 tensors where their
//                   last size is even). ValueSizes given (INT4 and UINT4): the values packed
//                   whole, as ONNX's int4 and uint4 tensors of any shape (value n, row-major,
//                   in byte n / 2): sizes {1, ..., 1, ceil(count / 2)}, or where ValueSizes'
//                   last is even, ValueSizes with the last halved (the same bytes);
//   IndicesTensor   as DML_OPERATOR_GATHER's (clamped; VKDML_OPERATOR_OUT_OF_RANGE wraps it for
//                   FILL or ERROR);
//   ScaleTensor     OutputTensor's DataType, the values' sizes but ceil(size / BlockSize) on
//                   QuantizeAxis; any strides;
//   ZeroPointTensor null (each type's zero point above), or UINT8 holding ValueType's values
//                   of ScaleTensor's sizes, packed: UINT8 a byte each; UINT8_BITS4 two a byte,
//                   each row of the last dimension starting on a byte (the last size ceil(size /
//                   2), as ONNX Runtime's uint8 zero points); INT4 and UINT4 two a byte, packed
//                   whole as ONNX's int4 and uint4 tensors (zero point n, row-major, in byte
//                   n / 2): sizes {1, ..., 1, ceil(count / 2)}, or where ScaleTensor's last size
//                   is even, its sizes with the last halved (the same bytes);
//   OutputTensor    FLOAT32 or FLOAT16, DML_OPERATOR_GATHER's sizes over the values; any strides.
// Bind InputTensor, IndicesTensor, ScaleTensor and, when given, ZeroPointTensor. Every binding
// offset is a multiple of 4 bytes (the kernels read and write 32-bit words, on any device: no
// 8/16-bit storage needed). A NaN or infinite scale gives NaN or infinities, NaN bits unspecified.
struct VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* ScaleTensor;
  const DML_TENSOR_DESC* ZeroPointTensor;  // optional
  const DML_TENSOR_DESC* OutputTensor;
  VKDML_BLOCK_QUANTIZED_TYPE ValueType;
  UINT Axis;
  UINT IndexDimensions;
  UINT QuantizeAxis;
  UINT BlockSize;
  // Optional (INT4 and UINT4): the values' sizes, InputTensor.DimensionCount of them, as ONNX's
  // shape of an int4 or uint4 tensor (any last size, odd too); InputTensor then holds them
  // packed whole. Null: InputTensor's sizes give them.
  const UINT* ValueSizes;
};

// vkdml's own: how VKDML_OPERATOR_EMBEDDING_BAG reduces a bag's rows.
enum VKDML_EMBEDDING_BAG_MODE : UINT {
  VKDML_EMBEDDING_BAG_MODE_SUM = 0,
  VKDML_EMBEDDING_BAG_MODE_MEAN = 1,
  VKDML_EMBEDDING_BAG_MODE_MAX = 2,
};

// vkdml's own (VKDML_OPERATOR_EMBEDDING_BAG; PyTorch's embedding_bag with 1-D input and
// offsets): output[b, :] reduces the rows InputTensor[indices[i], :] for the entries i of bag b,
// i in [offsets[b], offsets[b + 1]) (the last bag ends at the last entry, or, with
// IncludeLastOffset, at OffsetsTensor's last value). Each bound is clamped into [0, entries];
// a bag whose end is before its start is empty. Every value is a float32 (FLOAT16 and quantized
// tables' exactly: the quantized ones d * q, as VKDML_GATHER_QUANTIZED_ROWS'), and a bag is
// reduced in entry order, one rounding per step as IEEE float32 does it, denormals kept where
// the device can (README: Embedding bags):
//   SUM   0, plus each row (times its weight, that product rounded first);
//   MEAN  that sum (without weights) divided by the bag's rows, rounded once;
//   MAX   the first row, then NumPy's maximum with each next (a NaN stays; of equal values,
//         -0 and +0 included, the earlier stays).
// An empty bag, or one whose entries are all skipped, gives 0. The result is rounded to
// OutputTensor's type (FLOAT16: to nearest even); a NaN result's bits are unspecified. Every
// execution gives the same bits: the order is fixed, so VKDML_EXECUTION_FLAG_DETERMINISTIC
// changes nothing.
// An entry is skipped (not added, not counted) when its row, after clamping, is PaddingIndex
// (with HasPaddingIndex). An index out of [-rows, rows - 1] (signed) or [0, rows - 1] is
// clamped; VKDML_OPERATOR_OUT_OF_RANGE wraps it for DROP (the entry is skipped), FILL (a row of
// FillValue, an OutputTensor element) or ERROR.
// Rank D from 2 to 8 for every tensor, each of sizes 1 but the last two (IndicesTensor,
// OffsetsTensor and PerSampleWeightsTensor: but the last):
//   InputTensor   {rows, width}: FLOAT32 or FLOAT16 values (Format 0), or UINT8 {rows, bytes
//                 per row} of Format's blocks (width: 32 per block); a last stride of 1;
//   IndicesTensor {entries}, INT32, INT64, UINT32 or UINT64, any stride;
//   OffsetsTensor {bags} ({bags + 1} with IncludeLastOffset), IndicesTensor's DataType, any
//                 stride;
//   PerSampleWeightsTensor  null, or (Mode SUM) {entries} of OutputTensor's DataType, any
//                 stride: entry i's row is multiplied by its weight;
//   OutputTensor  {bags, width}: InputTensor's DataType (Format 0), or FLOAT32 or FLOAT16; a
//                 last stride of 1.
// Bind InputTensor, IndicesTensor, OffsetsTensor and, when given, PerSampleWeightsTensor. Every
// binding offset is a multiple of 4 bytes (the kernels read and write 32-bit words, on any
// device: no 8/16-bit storage needed).
struct VKDML_EMBEDDING_BAG_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* OffsetsTensor;
  const DML_TENSOR_DESC* PerSampleWeightsTensor;  // optional
  const DML_TENSOR_DESC* OutputTensor;
  VKDML_EMBEDDING_BAG_MODE Mode;
  VKDML_QUANTIZED_FORMAT Format;  // 0: InputTensor holds values
  BOOL IncludeLastOffset;
  BOOL HasPaddingIndex;
  UINT PaddingIndex;  // a row, below rows (PyTorch's negative padding_idx: rows + padding_idx)
};

// vkdml's own (VKDML_OPERATOR_MOE_PERMUTE; a mixture-of-experts layer's routing): entry
// i = t * k + j of TopkIdsTensor (token t's j-th expert) is routed to expert id, or dropped
// when id is outside [0, ExpertCount) (an expert-parallel shard's foreign experts). The kept
// entries, sorted by expert and, within an expert, by i (a stable counting sort: the same
// order on every device and run), take positions [0, kept); the dropped ones follow, in i
// order. For each position p with entry i = Permutation[p]:
//   OutputTensor[p, :]  = InputTensor[i / k, :] (p < kept), 0 (p >= kept);
//   PermutationTensor[p] = i (p < kept), -1 (p >= kept);
//   InverseTensor[i / k, i % k] = p, or -1 for a dropped entry;
//   OffsetsTensor[e] = the first position of expert e (e < ExpertCount), and kept at
//   e = ExpertCount: expert e's rows are [Offsets[e], Offsets[e + 1]).
// Every tensor has rank 1 to 8, of sizes 1 but the last two (the last one for
// OffsetsTensor and PermutationTensor), n = tokens * k below 2^31:
//   InputTensor        {tokens, width}: FLOAT32 or FLOAT16, a last stride of 1;
//   TopkIdsTensor      {tokens, k}: INT32, INT64, UINT32 or UINT64, any strides;
//   OutputTensor       {n, width}: InputTensor's DataType, as InputTensor's strides' rules;
//   OffsetsTensor      {ExpertCount + 1}: INT32 or INT64, any stride;
//   PermutationTensor  {n}: INT32 or INT64, any stride;
//   InverseTensor      {tokens, k}: INT32 or INT64, any strides.
// Bind InputTensor, TopkIdsTensor; then OutputTensor, OffsetsTensor, PermutationTensor,
// InverseTensor (no two overlapping). Every binding offset is a multiple of 4 bytes. Needs
// scratch of about 4 words an entry (CompileOperator says when the device has too little).
struct VKDML_MOE_PERMUTE_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* TopkIdsTensor;
  const DML_TENSOR_DESC* OutputTensor;
  const DML_TENSOR_DESC* OffsetsTensor;
  const DML_TENSOR_DESC* PermutationTensor;
  const DML_TENSOR_DESC* InverseTensor;
  UINT ExpertCount;  // experts, 1 to 2^24
};

// vkdml's own (VKDML_OPERATOR_MOE_UNPERMUTE; the experts' rows back to their tokens):
//   OutputTensor[t, :] = sum over j = 0 .. k - 1, in that order, of
//                        WeightsTensor[t, j] * InputTensor[InverseTensor[t, j], :]
// in float32: each value and weight as float32 (exactly), each product rounded once, then
// added to the sum (from +0) and rounded once, denormals kept where the device can (as
// VKDML_OPERATOR_EMBEDDING_BAG's weighted SUM); the sum rounded to OutputTensor's type
// (FLOAT16: to nearest even). A j whose row is outside [0, rows) (MOE_PERMUTE's -1 for a
// dropped entry) adds nothing. Every execution gives the same bits.
// Rank 1 to 8 for every tensor, of sizes 1 but the last two:
//   InputTensor    {rows, width}: FLOAT32 or FLOAT16, a last stride of 1;
//   InverseTensor  {tokens, k}: INT32, INT64, UINT32 or UINT64, any strides;
//   WeightsTensor  {tokens, k}: FLOAT32 or FLOAT16, any strides;
//   OutputTensor   {tokens, width}: FLOAT32 or FLOAT16, as InputTensor's strides' rules.
// Bind InputTensor, InverseTensor, WeightsTensor. Every binding offset is a multiple of 4 bytes.
struct VKDML_MOE_UNPERMUTE_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* InverseTensor;
  const DML_TENSOR_DESC* WeightsTensor;
  const DML_TENSOR_DESC* OutputTensor;
};

// vkdml's own: how a paged KV cache orders a block's tokens and heads. A cache of `blocks`
// blocks of block_size tokens each holds token slot s (s < blocks * block_size) in block
// s / block_size, row s % block_size of that block.
enum VKDML_PAGED_CACHE_LAYOUT : UINT {
  VKDML_PAGED_CACHE_LAYOUT_NHD = 0,  // {blocks, block_size, heads, head_size} (vLLM's flash)
  VKDML_PAGED_CACHE_LAYOUT_HND = 1,  // {blocks, heads, block_size, head_size}
};

// A paged cache (the paged operators' InputTensor and OutputTensor), rank 4 in Layout's order:
//   Format 0: FLOAT32 or FLOAT16 values, head_size a multiple of 4, a last stride of 1 and
//             (FLOAT16) even strides;
//   Format Q8_0 or Q4_0: UINT8 whose last size is head_size / 32 * the block's bytes (34 or
//             18; dml.h: VKDML_QUANTIZED_FORMAT), each head's row of head_size values being
//             whole blocks along head_size; a last stride of 1, any others.

// vkdml's own (VKDML_OPERATOR_PAGED_CACHE_WRITE; vLLM's reshape_and_cache_flash, one cache:
// run it for the keys and for the values): output = input; then for each token t, in order,
// with s = SlotMappingTensor[t]:
//   s < 0 (signed types): the token is skipped (padding);
//   s >= blocks * block_size: out of range: by default (ERROR) skipped and reported, as a
//     checked execution reports (BindingTable::IndexStatus, Device::Run: IndexOutOfRange);
//     VKDML_OPERATOR_OUT_OF_RANGE wraps it for DROP (skipped silently). It is never clamped:
//     CLAMP and FILL are refused;
//   else the cache's row of token slot s, head h (Layout) becomes UpdatesTensor[t, h, :],
//     quantized (Q8_0, Q4_0) block by block as VKDML_SCATTER_QUANTIZED_ROWS' rule, bit for bit
//     with ggml's CPU quantizer (FLOAT16 updates converted to float32 first, exactly).
// Where tokens name one slot, the last of them wins, in every execution (so
// VKDML_EXECUTION_FLAG_DETERMINISTIC changes nothing).
//   InputTensor        the cache (above);
//   SlotMappingTensor  {tokens}, INT32, INT64, UINT32 or UINT64, any stride (IndicesTensor:
//                      it is bound and reported as one);
//   UpdatesTensor      {tokens, heads, head_size}: the cache's DataType (Format 0), or FLOAT32
//                      or FLOAT16 (quantized); a last stride of 1, FLOAT16 even strides;
//   OutputTensor       InputTensor's sizes and type, a last stride of 1; may be bound where
//                      InputTensor is (in place: only the written rows change).
// Every binding offset is a multiple of 4 bytes (the kernels read and write 32-bit words, on any
// device: no 8/16-bit storage needed). Tensors fit one descriptor (no large path).
struct VKDML_PAGED_CACHE_WRITE_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* SlotMappingTensor;
  const DML_TENSOR_DESC* UpdatesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  VKDML_PAGED_CACHE_LAYOUT Layout;
  VKDML_QUANTIZED_FORMAT Format;  // 0: the cache holds values
};

// vkdml's own (VKDML_OPERATOR_PAGED_GATHER; vLLM's gather_cache): each sequence's tokens from a
// paged cache, one after another. Output row t (t < total_tokens) belongs to sequence b, the
// last with starts[b] <= t: SequenceStartsTensor[b] clamped into [0, total_tokens], or from
// SequenceLengthsTensor starts[0] = 0 and starts[b + 1] = min(starts[b] + length b,
// total_tokens), a negative length counting 0; with
// i = t - starts[b] and p = i + TokenOffsetsTensor[b] (0 without it: prefix reuse), it is the
// cache's row of block BlockTableTensor[b, p / block_size], row p % block_size, for every head:
// values copied (Format 0) or dequantized as VKDML_GATHER_QUANTIZED_ROWS' (d * q in float32,
// one rounding; to FLOAT16 to nearest even). Rows before starts[0] or from
// starts[sequences] on are not written. A block out of [0, blocks), or p / block_size past
// max_blocks, is out of range: by default (ERROR) reported and clamped (into [0, blocks) and the
// row's last entry; a position past the row is reported at that entry);
// VKDML_OPERATOR_OUT_OF_RANGE wraps it for CLAMP or FILL (the token's values are FillValue).
// Starts must not decrease (else the rows are unspecified; no access out of bounds).
//   InputTensor            the cache (above: VKDML_PAGED_CACHE_LAYOUT);
//   BlockTableTensor       {sequences, max_blocks}, INT32, INT64, UINT32 or UINT64, any strides
//                          (IndicesTensor: bound and reported as one);
//   SequenceStartsTensor   {sequences + 1}: the cumulative lengths (vLLM's cu_seq_lens, starting
//                          at 0), BlockTableTensor's DataType, any stride; or null, with
//   SequenceLengthsTensor  {sequences}: each sequence's length, BlockTableTensor's DataType, any
//                          stride (summed on the device: no cumulative lengths to compute);
//   TokenOffsetsTensor     null, or {sequences}, BlockTableTensor's DataType, any stride; an
//                          offset below 0 or from 2^31 puts its sequence's tokens out of range;
//   OutputTensor           {total_tokens, heads, head_size}: the cache's DataType (Format 0), or
//                          FLOAT32 or FLOAT16 (quantized); a last stride of 1, FLOAT16 even
//                          strides.
// Bind InputTensor, BlockTableTensor, SequenceStartsTensor (or SequenceLengthsTensor) and, when
// given, TokenOffsetsTensor.
// Every binding offset is a multiple of 4 bytes; tensors fit one descriptor (no large path).
struct VKDML_PAGED_GATHER_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* BlockTableTensor;
  const DML_TENSOR_DESC* SequenceStartsTensor;
  const DML_TENSOR_DESC* TokenOffsetsTensor;  // optional
  const DML_TENSOR_DESC* OutputTensor;
  VKDML_PAGED_CACHE_LAYOUT Layout;
  VKDML_QUANTIZED_FORMAT Format;                 // 0: the cache holds values
  const DML_TENSOR_DESC* SequenceLengthsTensor;  // instead of SequenceStartsTensor (null)
};

// vkdml's own: how VKDML_OPERATOR_SEGMENT_REDUCE reduces a segment's rows.
enum VKDML_SEGMENT_REDUCE_FUNCTION : UINT {
  VKDML_SEGMENT_REDUCE_FUNCTION_SUM = 0,
  VKDML_SEGMENT_REDUCE_FUNCTION_MEAN = 1,
  VKDML_SEGMENT_REDUCE_FUNCTION_MIN = 2,
  VKDML_SEGMENT_REDUCE_FUNCTION_MAX = 3,
  VKDML_SEGMENT_REDUCE_FUNCTION_PROD = 4,
  VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN = 5,  // the row (along Axis) of MIN's value
  VKDML_SEGMENT_REDUCE_FUNCTION_ARGMAX = 6,  // the row of MAX's value
};

// vkdml's own: what VKDML_OPERATOR_SEGMENT_REDUCE gives an empty segment.
enum VKDML_SEGMENT_EMPTY : UINT {
  // pytorch_scatter's segment_csr and segment_coo: 0, PROD 1; ARGMIN and ARGMAX the axis size.
  VKDML_SEGMENT_EMPTY_SCATTER = 0,
  // torch.segment_reduce's without `initial`: SUM 0, MEAN NaN (integers 0), MAX -inf (integers:
  // the type's lowest), MIN +inf (the type's highest), PROD 1.
  VKDML_SEGMENT_EMPTY_TORCH = 1,
  // torch.segment_reduce's `initial`: every fold starts from InitialValue (MEAN: the sum does,
  // divided by the rows alone), so an empty segment gets InitialValue.
  VKDML_SEGMENT_EMPTY_INITIAL = 2,
};

// vkdml's own (VKDML_OPERATOR_SEGMENT_REDUCE; pytorch_scatter's segment_csr and segment_coo,
// torch.segment_reduce): output[b..., s, i...] reduces InputTensor[b..., r, i...] over the rows r
// (along Axis) of segment s. With offsets (SortedIndices 0), segment s of batch b... is rows
// [offsets[b..., s], offsets[b..., s + 1]): each bound clamped into [0, rows], an end before its
// start makes the segment empty. With SortedIndices 1, IndicesTensor holds a segment id per row,
// non-decreasing: segment s is the rows whose id is s (found by bisection; ids of no segment,
// and the rows of an unsorted IndicesTensor, belong to an unspecified segment or none).
// Each segment is reduced in row order, one rounding a step in the element's type, integers
// modulo 2^bits (FLOAT16 in float32, rounded to nearest even once at the end), denormals kept
// where the device can (README: Segment reductions), so every device and run gives the same bits:
//   SUM and MEAN  0, plus each row; MEAN divides by the rows, rounded once (integers: toward
//                 negative infinity, the sum first wrapped to the type);
//   PROD          1, times each row;
//   MIN and MAX   the first row, then NumPy's minimum or maximum with each next (a NaN stays; of
//                 equal values, -0 and +0 included, the earlier stays); ARGMIN and ARGMAX give
//                 the row (0 to rows - 1, along Axis) where that value was taken. For both,
//                 run ARGMIN or ARGMAX, then DML_OPERATOR_GATHER_ELEMENTS of InputTensor along
//                 Axis at those rows, wrapped for VKDML_OUT_OF_RANGE_MODE_FILL with the empty
//                 value (an empty segment's row, rows, is out of range): MIN's or MAX's values.
// An empty segment gets EmptyValue's (VKDML_SEGMENT_EMPTY); a NaN result's bits are
// unspecified. VKDML_EXECUTION_FLAG_DETERMINISTIC changes nothing. Checked executions
// (VKDML_EXECUTION_FLAG_CHECK_INDICES) report the first offset that is negative, past rows or
// below the one before it, or the first id outside [0, segments) or below the one before it.
// Rank D from 1 to 8 for every tensor; Axis below D:
//   InputTensor   {b..., rows, i...} of any data type; any strides;
//   IndicesTensor {b..., segments + 1, 1...} (offsets) or {b..., rows, 1...} (SortedIndices),
//                 INT32, INT64, UINT32 or UINT64; any strides (0 to broadcast);
//   OutputTensor  {b..., segments, i...}: InputTensor's DataType, or INT32, INT64, UINT32 or
//                 UINT64 for ARGMIN and ARGMAX; any strides, no two elements at one address.
// Bind InputTensor and IndicesTensor. Every binding offset is a multiple of 4 bytes (the kernels
// read and write 32-bit words, on any device: no 8/16-bit storage needed). Every tensor fits one
// descriptor (VKDML_FEATURE_TENSOR_SIZE).
struct VKDML_SEGMENT_REDUCE_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT Axis;
  VKDML_SEGMENT_REDUCE_FUNCTION ReduceFunction;
  BOOL SortedIndices;  // 0: IndicesTensor holds offsets; 1: a sorted segment id per row
  VKDML_SEGMENT_EMPTY EmptyValue;
  DML_SCALAR_UNION InitialValue;  // VKDML_SEGMENT_EMPTY_INITIAL: an element of InputTensor's type
};

// Not a field of any struct: CompileOperator takes these as a UINT and refuses unknown bits, so
// this one keeps DirectML's form (and `cond ? FLAG : 0` stays free of warnings).
enum DML_EXECUTION_FLAGS {
  DML_EXECUTION_FLAG_NONE = 0,
  DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION = 0x1,  // accepted; vkdml only moves data
  DML_EXECUTION_FLAG_DISABLE_META_COMMANDS = 0x2,             // accepted and ignored
  DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE = 0x4,              // accepted and ignored
  // vkdml's own: check every index instead of clamping it. An execution that meets an
  // out-of-range index still clamps it (no out-of-bounds access), and BindingTable::IndexStatus
  // reports the first offending one afterwards.
  VKDML_EXECUTION_FLAG_CHECK_INDICES = 0x100,
  // vkdml's own, for every scatter (DirectML's and the reductions): apply the updates one at a
  // time in the row-major order of IndicesTensor, so the output is bit-identical run after run
  // and device after device (later updates win without a reduction; ADD is ((x + u0) + u1) + ...,
  // numpy.add.at). Costs a sort of the updates by target and scratch memory (README: Scatter
  // reductions), except for reductions of 4- and 8-byte integers, which give the same bits in
  // any order and run as by default, and float32 and float64 MAX and MIN, which run as by default
  // and then settle ties (+0 and -0, NaN payloads) in two more passes. Accepted and without
  // effect for gathers, embedding bags and the paged cache's operators, which are deterministic.
  VKDML_EXECUTION_FLAG_DETERMINISTIC = 0x200,
};

// What Device::CheckFeatureSupport answers (DirectML's IDMLDevice::CheckFeatureSupport): each
// feature takes a query struct and fills a data struct.
enum DML_FEATURE : UINT {
  // DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT -> DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT:
  // whether this device runs the operators on tensors of DataType.
  DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT = 0,
  // vkdml's own. VKDML_FEATURE_QUERY_REDUCTION_SUPPORT -> VKDML_FEATURE_DATA_REDUCTION_SUPPORT:
  // whether this device runs the scatters with ReduceFunction on DataType.
  VKDML_FEATURE_REDUCTION_SUPPORT = 0x10001,
  // vkdml's own. VKDML_FEATURE_QUERY_BINDING_ALIGNMENT -> VKDML_FEATURE_DATA_BINDING_ALIGNMENT:
  // what every DML_BUFFER_BINDING::Offset of a tensor of DataType must be a multiple of.
  VKDML_FEATURE_BINDING_ALIGNMENT = 0x10002,
  // vkdml's own. VKDML_FEATURE_QUERY_TENSOR_SIZE -> VKDML_FEATURE_DATA_TENSOR_SIZE: the largest
  // TotalTensorSizeInBytes this device takes for a tensor of an operator of OperatorType.
  VKDML_FEATURE_TENSOR_SIZE = 0x10003,
};

struct DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT {
  DML_TENSOR_DATA_TYPE DataType;
};
struct DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT {
  BOOL IsSupported;
};
struct VKDML_FEATURE_QUERY_REDUCTION_SUPPORT {
  DML_TENSOR_DATA_TYPE DataType;
  VKDML_REDUCE_FUNCTION ReduceFunction;
};
struct VKDML_FEATURE_DATA_REDUCTION_SUPPORT {
  BOOL IsSupported;
};
struct VKDML_FEATURE_QUERY_BINDING_ALIGNMENT {
  DML_TENSOR_DATA_TYPE DataType;
};
// The element size; 4 for 1- and 2-byte types on a device without 8/16-bit storage, whose
// kernels move them in the 4-byte words that hold them. (The reduce operators on 1- and 2-byte
// types also need OutputTensor's offset to be a multiple of 4, on every device.)
struct VKDML_FEATURE_DATA_BINDING_ALIGNMENT {
  UINT OffsetAlignment;
};
struct VKDML_FEATURE_QUERY_TENSOR_SIZE {
  DML_OPERATOR_TYPE OperatorType;  // not VKDML_OPERATOR_OUT_OF_RANGE: the operator it wraps
};
// UINT64_MAX where tensors past maxStorageBufferRange take the large path (only the device's
// allocations bound them). VKDML_OPERATOR_EMBEDDING_BAG's tensors but its InputTensor (the
// table) and _GATHER_BLOCK_QUANTIZED's ScaleTensor and ZeroPointTensor must fit one descriptor:
// maxStorageBufferRange less the larger of minStorageBufferOffsetAlignment and 16 bytes;
// CompileOperator refuses a larger one (Unsupported).
struct VKDML_FEATURE_DATA_TENSOR_SIZE {
  UINT64 MaxTensorBytes;
};

// DirectML binds an ID3D12Resource; vkdml binds a VkBuffer. Offset and SizeInBytes are bytes.
struct DML_BUFFER_BINDING {
  VkBuffer Buffer;
  UINT64 Offset;
  UINT64 SizeInBytes;
};

}  // namespace vkdml
