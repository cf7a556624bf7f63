/* haversine_mesh.c: seed 000 (t40): the lat/lon mesh made inside the kernel
 * through the example registry: compile, time, and check against a long
 * double host reference. The kernel source is printed with --source.
 *
 *   ./example_haversine_mesh [N] [--source]
 */
#include "examples.h"

int main(int argc, char **argv) { return kiln_example_main("haversine_mesh", argc, argv); }
