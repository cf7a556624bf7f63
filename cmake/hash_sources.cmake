# Writes a C source defining `const char <VAR>[]`: the SHA-256 of the files
# in IN ("|"-separated, in that order), so that a cache key can change
# whenever the code that writes a module's source changes, with no version
# to bump by hand. Run as: cmake -DIN=a|b -DOUT=... -DVAR=... -P hash_sources.cmake
string(REPLACE "|" ";" files "${IN}")
set(all "")
foreach(f ${files})
  file(SHA256 "${f}" h)
  string(APPEND all "${h}")
endforeach()
string(SHA256 digest "${all}")
file(WRITE "${OUT}" "/* generated from the CPU transformer's sources; do not edit */\n"
     "const char ${VAR}[] = \"${digest}\";\n")
