/* curand_symbols.h: the cuRAND functions kiln uses, one line each
 * (X-macro: X(name, return type, parameter list)). cuRAND's types are
 * declared here by kiln (no CUDA headers at build time): a generator is an
 * opaque pointer, statuses and enums are ints with cuRAND's values. */
#define KILN_CURAND_SYMBOLS(X)                                                                               \
    X(curandCreateGenerator, int, (void **gen, int type))                                                    \
    X(curandCreateGeneratorHost, int, (void **gen, int type))                                                \
    X(curandDestroyGenerator, int, (void *gen))                                                              \
    X(curandGetVersion, int, (int *version))                                                                 \
    X(curandSetStream, int, (void *gen, void *stream))                                                       \
    X(curandSetPseudoRandomGeneratorSeed, int, (void *gen, unsigned long long seed))                         \
    X(curandSetGeneratorOffset, int, (void *gen, unsigned long long offset))                                 \
    X(curandSetGeneratorOrdering, int, (void *gen, int order))                                               \
    X(curandGenerate, int, (void *gen, unsigned int *out, size_t n))                                         \
    X(curandGenerateUniform, int, (void *gen, float *out, size_t n))                                         \
    X(curandGenerateUniformDouble, int, (void *gen, double *out, size_t n))                                  \
    X(curandGenerateNormal, int, (void *gen, float *out, size_t n, float mean, float stddev))                \
    X(curandGenerateNormalDouble, int, (void *gen, double *out, size_t n, double mean, double stddev))       \
    X(curandGenerateLogNormal, int, (void *gen, float *out, size_t n, float mean, float stddev))             \
    X(curandGenerateLogNormalDouble, int, (void *gen, double *out, size_t n, double mean, double stddev))    \
    X(curandGeneratePoisson, int, (void *gen, unsigned int *out, size_t n, double lambda))
