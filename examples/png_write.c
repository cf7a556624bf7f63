/* png_write.c: the one image format the examples write (Mandelbrot), through
 * libpng when the build found it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "example_list.h"

#ifdef KILN_HAVE_PNG
#include <png.h>

int kiln_example_write_png_gray(const char *path, const uint8_t *pixels, int width, int height) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        return KILN_ERR_IO;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info || setjmp(png_jmpbuf(png))) {
        /* libpng reports its errors by longjmp to here. */
        png_destroy_write_struct(&png, &info);
        fclose(f);
        fprintf(stderr, "libpng failed writing %s\n", path);
        return KILN_ERR_IO;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < height; y++) png_write_row(png, pixels + (size_t)y * (size_t)width);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        return KILN_ERR_IO;
    }
    return KILN_OK;
}
#else
int kiln_example_write_png_gray(const char *path, const uint8_t *pixels, int width, int height) {
    (void)path, (void)pixels, (void)width, (void)height;
    return KILN_ERR_UNSUPPORTED;
}
#endif
