// `checksum`: a corral plugin in C.
//
// Shows how to write a plugin against the bindings `wit-bindgen c` generates from
// wit/plugin.wit (gen/plugin.h): list the tools, parse the arguments (JSON text, already checked
// against the input schema by the host), and return text plus structured output, or an error.
//
// Every string handed to the host must come from malloc (plugin_string_dup does that): the
// generated post-return code frees it once the host has copied the result.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/plugin.h"
#include "json.h"

static const char INPUT_SCHEMA[] =
    "{\"type\":\"object\","
    "\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"The text whose UTF-8 bytes are checksummed.\"}},"
    "\"required\":[\"text\"],\"additionalProperties\":false}";

static const char OUTPUT_SCHEMA[] =
    "{\"type\":\"object\","
    "\"properties\":{\"crc32\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{8}$\"},\"bytes\":{\"type\":\"integer\",\"minimum\":0}},"
    "\"required\":[\"crc32\",\"bytes\"]}";

static void some_string(plugin_option_string_t *opt, const char *s) {
    opt->is_some = true;
    plugin_string_dup(&opt->val, s);
}

static plugin_option_bool_t some_bool(bool value) {
    return (plugin_option_bool_t){.is_some = true, .val = value};
}

void exports_corral_plugin_tools_list_tools(exports_corral_plugin_tools_list_tool_t *ret) {
    ret->len = 1;
    ret->ptr = calloc(1, sizeof(exports_corral_plugin_tools_tool_t));
    exports_corral_plugin_tools_tool_t *tool = &ret->ptr[0];
    plugin_string_dup(&tool->name, "crc32");
    some_string(&tool->title, "CRC-32 checksum");
    plugin_string_dup(&tool->description, "Computes the CRC-32 (IEEE 802.3, as zip and PNG use it) of `text`'s UTF-8 bytes.");
    plugin_string_dup(&tool->input_schema, INPUT_SCHEMA);
    some_string(&tool->output_schema, OUTPUT_SCHEMA);
    tool->annotations.read_only = some_bool(true);
    tool->annotations.destructive = some_bool(false);
    tool->annotations.idempotent = some_bool(true);
    tool->annotations.open_world = some_bool(false);
    tool->task_support = CORRAL_PLUGIN_TYPES_TASK_SUPPORT_FORBIDDEN;
}

static uint32_t crc32(const uint8_t *data, size_t len) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        crc ^= data[i];
        for (int bit = 0; bit < 8; bit++) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

// One text block; `is_error` marks a failure the model should read.
static void text_result(exports_corral_plugin_tools_call_result_t *ret, const char *text, bool is_error) {
    ret->content.len = 1;
    ret->content.ptr = calloc(1, sizeof(corral_plugin_types_content_t));
    ret->content.ptr[0].tag = CORRAL_PLUGIN_TYPES_CONTENT_TEXT;
    plugin_string_dup(&ret->content.ptr[0].val.text, text);
    ret->structured.is_some = false;
    ret->is_error = is_error;
}

void exports_corral_plugin_tools_call_tool(plugin_string_t *name, plugin_string_t *arguments,
                                           exports_corral_plugin_tools_call_result_t *ret) {
    if (name->len != 5 || memcmp(name->ptr, "crc32", 5) != 0) {
        text_result(ret, "unknown tool; this plugin has `crc32`", true);
    } else {
        size_t len = 0;
        char *text = json_string_field((const char *)arguments->ptr, arguments->len, "text", &len);
        if (text == NULL) {
            text_result(ret, "`text` must be a string", true);
        } else {
            char json[64];
            snprintf(json, sizeof json, "{\"crc32\":\"%08x\",\"bytes\":%zu}", crc32((const uint8_t *)text, len), len);
            free(text);
            text_result(ret, json, false);
            some_string(&ret->structured, json);
        }
    }
    // The arguments belong to this function: free them.
    plugin_string_free(name);
    plugin_string_free(arguments);
}
