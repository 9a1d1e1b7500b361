// Just enough JSON for flat argument objects: the value of one string field.
#pragma once
#include <stddef.h>

// Finds `"key": "..."` at the top level of the JSON object `json` (`json_len` bytes) and returns
// the string's value, unescaped to UTF-8 and NUL-terminated, from malloc (its length without the
// NUL in `*out_len`); NULL when the field is missing, is not a string, or the JSON is malformed.
char *json_string_field(const char *json, size_t json_len, const char *key, size_t *out_len);
