# Writes ${OUT}: a C++ header that defines `${NAME}`, the bytes of ${IN}
# followed by a NUL, as a `static const unsigned char` array (so its size is
# the file's plus one). Bytes rather than a raw string literal, so that no
# content of the file can end the literal early. Run at build time by
# lib/Target/CUDA/CMakeLists.txt, whenever ${IN} changes.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1, " bytes "${hex}")
# 12 bytes a line (CMake's regular expressions have no {12}).
string(REPEAT "0x[0-9a-f][0-9a-f], " 12 line)
string(REGEX REPLACE "(${line})" "\\1\n  " bytes "${bytes}")
string(REGEX REPLACE " \n" "\n" bytes "${bytes}")
get_filename_component(from "${IN}" NAME)
file(WRITE "${OUT}"
  "// Generated from ${from} by EmbedFile.cmake; do not edit.\n"
  "static const unsigned char ${NAME}[] = {\n  ${bytes}0x00};\n")
