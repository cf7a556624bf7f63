# Turns a text file into a C source defining `const char <VAR>[]` (NUL ended),
# so preludes live in real .cuh files that editors and linters see, yet ship
# inside libkiln. Run as: cmake -DIN=... -DOUT=... -DVAR=... -P embed_text.cmake
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN}; do not edit */\n"
     "const char ${VAR}[] = {${body}0x00};\n")
