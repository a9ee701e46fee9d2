// `vkdml bench`: times vkdml's operators on large random tensors with Vulkan timestamp queries
// against a plain buffer copy of the same byte count. See examples/bench/BENCH.md; bench.cpp
// lists the files it is made of.
#pragma once

// argv[0] is "bench" (or the program name); returns the process exit status.
int BenchMain(int argc, char** argv);
