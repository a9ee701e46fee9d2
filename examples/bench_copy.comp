// The reference kernel of `vkdml bench`: a plain uvec4 buffer copy (16 bytes per invocation and
// iteration, grid-stride loop), timed on the same byte count as each case.
#version 450
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uvec4 dst[]; };

layout(push_constant) uniform Push {
  uint count;  // uvec4 elements to copy
} pc;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) {
    dst[i] = src[i];
  }
}
