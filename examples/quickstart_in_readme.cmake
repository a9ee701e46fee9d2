# ctest's examples.quickstart_in_readme: fails unless README.md shows examples/quickstart.cpp
# verbatim, as a ```cpp block. cmake -DREADME=... -DQUICKSTART=... -P quickstart_in_readme.cmake
file(READ "${README}" readme)
file(READ "${QUICKSTART}" code)
string(FIND "${readme}" "```cpp\n${code}```\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README} does not show ${QUICKSTART} verbatim: copy the file into the "
                      "code block of its \"Using the library\" section")
endif()
