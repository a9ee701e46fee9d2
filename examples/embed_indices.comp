// examples/embed.cpp's own compute pass: writes the frame's indices for vkdml's gather, from the
// frame number the host wrote. Row (seed * 7 + i * 5) mod rows; every odd index counts from the
// end (row - rows), as DirectML's negative indices do. embed.cpp's ExpectedRow is the same.
#version 450
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer Frame {
  uint seed;   // the frame number
  uint count;  // indices to write
  uint rows;   // rows of the table the gather reads
} frame;
layout(std430, set = 0, binding = 1) writeonly buffer Indices { int indices[]; };

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= frame.count) return;
  int row = int((frame.seed * 7u + i * 5u) % frame.rows);
  indices[i] = (i % 2u == 1u) ? row - int(frame.rows) : row;
}
