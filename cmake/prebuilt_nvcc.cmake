# One nvcc compile of a prebuilt module (cmake/prebuilt.cmake), as kiln's
# NVRTC path compiles it: sm_90, C++17, nothing else. NVRTC's -default-device
# has no nvcc equivalent; the modules kiln prebuilds (CUB's kernels and
# kiln's prelude and signature records) define no unannotated function that
# device code calls, so they need none. nvcc's host preprocessor warns that
# the prelude redefines INFINITY, NAN, HUGE_VAL and HUGE_VALF of the math.h
# nvcc includes first (NVRTC has none): the kernels get kiln's definitions,
# as under NVRTC; the output is shown only when nvcc fails. A failure (a host compiler this nvcc
# does not support, say) is no build error: it leaves an empty OUT, the
# module is left out of the table, and NVRTC compiles it at run time.
# The same text by the same nvcc is not compiled again (OUT.from keeps what
# OUT was made from): the step runs whenever libkiln's objects change.
#   cmake -DNVCC=... -DMODE=cubin|ptx -DIN=x.cu -DOUT=x.cubin -P prebuilt_nvcc.cmake
file(SHA256 ${IN} text_hash)
set(from "${NVCC} -${MODE} ${text_hash}")
if(EXISTS ${OUT} AND EXISTS ${OUT}.from)
  file(READ ${OUT}.from before)
  if(before STREQUAL from)
    file(TOUCH ${OUT})
    return()
  endif()
endif()
file(REMOVE ${OUT}.from)
execute_process(
  COMMAND ${NVCC} -${MODE} -arch=sm_90 -std=c++17 -O3 ${IN} -o ${OUT}.part
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  file(RENAME ${OUT}.part ${OUT})
  file(WRITE ${OUT}.from "${from}")
else()
  message(WARNING "kiln: nvcc could not compile ${IN}; the prebuilt kernels of that module are "
                  "left out and NVRTC compiles them at run time:\n${out}${err}")
  file(REMOVE ${OUT}.part)
  file(WRITE ${OUT} "")
endif()
