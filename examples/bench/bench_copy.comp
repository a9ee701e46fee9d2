// The reference kernel of `vkdml bench`: a plain uvec4 buffer copy, one 16-byte element per
// invocation, timed on the same byte count as each case. The grid is 2D (x at most 65535
// workgroups) so that every element gets its own invocation: no loop, whatever the size.
#version 450
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uvec4 dst[]; };

layout(push_constant) uniform Push {
  uint count;  // uvec4 elements to copy
} pc;

void main() {
  uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  uint i = group * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i < pc.count) dst[i] = src[i];
}
