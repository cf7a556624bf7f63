/* matmul.c: seed 001's shared-memory tiled matrix multiply through the
 * example registry: compile, upload, time, and check against a float64 host
 * product. The kernel source is printed with --source.
 *
 *   ./example_matmul [N] [--source]
 */
#include "examples.h"

int main(int argc, char **argv) { return kiln_example_main("matmul", argc, argv); }
