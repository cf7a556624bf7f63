/* settings.h: every environment variable kiln reads (KILN_*), in one table
 * (settings.c) with its type, default and a line of documentation, and the
 * typed getters the rest of kiln reads them through. `kiln info` prints the
 * table with the current values; docs/environment.md is checked against it.
 *
 * A new setting is a line in settings.c's table: its name as a string
 * literal (the documentation's check greps for it), then a getter call
 * where it is read. Asking for a name the table lacks is a bug, caught by
 * an assertion in debug builds. */
#ifndef KILN_CORE_SETTINGS_H
#define KILN_CORE_SETTINGS_H

#include "kiln.h"

typedef enum kiln_setting_type {
    KILN_SETTING_FLAG,   /* on or off; see each line for what "set" means */
    KILN_SETTING_INT,    /* a whole number in a range */
    KILN_SETTING_NUMBER, /* a decimal number */
    KILN_SETTING_CHOICE, /* one of a few words */
    KILN_SETTING_TEXT,   /* free text, such as a command */
    KILN_SETTING_PATH    /* a file or folder */
} kiln_setting_type;

typedef struct kiln_setting {
    const char *name; /* "KILN_NUM_THREADS" */
    kiln_setting_type type;
    const char *default_value; /* as a user reads it: "online CPUs" */
    const char *doc;           /* one line */
} kiln_setting;

/* The table, and its length. */
const kiln_setting *kiln_settings(int *count);
/* The table's line for `name`, NULL if it has none. */
const kiln_setting *kiln_setting_find(const char *name);

/* The variable's value as the environment has it, NULL when unset. */
const char *kiln_setting_string(const char *name);
/* Unset or empty: `fallback`; "0": 0; anything else: 1. */
int kiln_setting_flag(const char *name, int fallback);
/* The value when all of it is a decimal whole number in [min, max], else
 * `fallback` (unset, empty, not a number, out of range). */
long kiln_setting_int(const char *name, long min, long max, long fallback);
/* A choice among `count` words: the index of the word the value is, else
 * `fallback` (unset, empty, or a word not among them). */
int kiln_setting_choice(const char *name, const char *const *words, int count, int fallback);

#endif
