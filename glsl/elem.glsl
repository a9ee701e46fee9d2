// The element type of a kernel keyed on element size ELEM (bytes): T in buffers, V in registers.
#if ELEM == 1
#extension GL_EXT_shader_8bit_storage : require
#define T uint8_t
#define V uint  // registers hold 8- and 16-bit values widened (storage-only types)
#elif ELEM == 2
#extension GL_EXT_shader_16bit_storage : require
#define T uint16_t
#define V uint
#elif ELEM == 4
#define T uint
#define V T
#elif ELEM == 8
#define T uvec2
#define V T
#elif ELEM == 16
#define T uvec4
#define V T
#elif ELEM == 32  // CPU devices' widest: lanes load a vector's components one at a time
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define T u64vec4
#define V T
#endif
