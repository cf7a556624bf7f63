/* prof_cupti_symbols.h: every libcupti entry point the profiler calls, one
 * line each, expanded by prof_cupti.c into a table filled with dlsym (CUPTI
 * exports plain C names). All return CUptiResult (an int, 0 on success).
 *   KILN_CUPTI_REQUIRED(name, args): without it CUPTI mode is unavailable
 *   KILN_CUPTI_OPTIONAL(name, args): NULL when the library lacks it
 * The types are prof_cupti.c's own declarations of CUPTI's (no CUPTI headers
 * at build time); the layouts they rely on are listed there. */
// clang-format off: it reads `T *x` in a macro argument as a multiplication.
KILN_CUPTI_REQUIRED(cuptiGetResultString, (int result, const char **str))
KILN_CUPTI_REQUIRED(cuptiSubscribe,
                    (cupti_subscriber * subscriber, cupti_callback_fn callback, void *userdata))
KILN_CUPTI_REQUIRED(cuptiUnsubscribe, (cupti_subscriber subscriber))
KILN_CUPTI_REQUIRED(cuptiActivityRegisterCallbacks,
                    (cupti_buffer_requested_fn requested, cupti_buffer_completed_fn completed))
KILN_CUPTI_REQUIRED(cuptiActivityEnable, (int kind))
KILN_CUPTI_REQUIRED(cuptiActivityDisable, (int kind))
KILN_CUPTI_REQUIRED(cuptiActivityFlushAll, (uint32_t flag))
KILN_CUPTI_REQUIRED(cuptiActivityGetNextRecord, (uint8_t * buffer, size_t valid_bytes, cupti_record **record))
KILN_CUPTI_REQUIRED(cuptiGetTimestamp, (uint64_t * timestamp_ns))
KILN_CUPTI_OPTIONAL(cuptiActivityGetNumDroppedRecords, (void *context, uint32_t stream_id, size_t *dropped))
KILN_CUPTI_OPTIONAL(cuptiActivityFlushPeriod, (uint32_t period_ms))
KILN_CUPTI_OPTIONAL(cuptiActivitySetAttribute, (int attribute, size_t *value_size, void *value))
KILN_CUPTI_OPTIONAL(cuptiGetContextId, (CUcontext context, uint32_t *context_id))
KILN_CUPTI_OPTIONAL(cuptiGetStreamIdEx,
                    (CUcontext context, CUstream stream, uint8_t per_thread_stream, uint32_t *stream_id))
KILN_CUPTI_OPTIONAL(cuptiGetStreamId, (CUcontext context, CUstream stream, uint32_t *stream_id))
// clang-format on
