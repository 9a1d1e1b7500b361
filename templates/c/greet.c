// `{{name}}`: a corral plugin in C.
//
// gen/ holds the bindings `wit-bindgen c` 0.63.0 made from wit/plugin.wit: gen/plugin.h
// declares the two functions to write here, list_tools and call_tool, and the WIT types they
// use. Every string handed to the host must come from malloc (plugin_string_dup does that): the
// generated code frees it once the host has copied the result.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/plugin.h"
#include "json.h"

static const char INPUT_SCHEMA[] =
    "{\"type\":\"object\","
    "\"properties\":{\"name\":{\"type\":\"string\",\"description\":\"Who to greet.\"}},"
    "\"required\":[\"name\"],\"additionalProperties\":false}";

void exports_corral_plugin_tools_list_tools(exports_corral_plugin_tools_list_tool_t *ret) {
    ret->len = 1;
    ret->ptr = calloc(1, sizeof(exports_corral_plugin_tools_tool_t));
    exports_corral_plugin_tools_tool_t *tool = &ret->ptr[0];
    plugin_string_dup(&tool->name, "{{tool}}");
    tool->title.is_some = true;
    plugin_string_dup(&tool->title.val, "Greet");
    plugin_string_dup(&tool->description, "Greets someone by name.");
    plugin_string_dup(&tool->input_schema, INPUT_SCHEMA);
    tool->annotations.read_only = (plugin_option_bool_t){.is_some = true, .val = true};
    tool->task_support = CORRAL_PLUGIN_TYPES_TASK_SUPPORT_FORBIDDEN;
}

// One text block; `is_error` marks a failure the model should read and may correct.
static void text_result(exports_corral_plugin_tools_call_result_t *ret, const char *text, bool is_error) {
    ret->content.len = 1;
    ret->content.ptr = calloc(1, sizeof(corral_plugin_types_content_t));
    ret->content.ptr[0].tag = CORRAL_PLUGIN_TYPES_CONTENT_TEXT;
    plugin_string_dup(&ret->content.ptr[0].val.text, text);
    ret->structured.is_some = false;
    ret->is_error = is_error;
}

// `arguments` is the JSON the client sent, already checked against the input schema.
void exports_corral_plugin_tools_call_tool(plugin_string_t *name, plugin_string_t *arguments,
                                           exports_corral_plugin_tools_call_result_t *ret) {
    size_t len = 0;
    char *who = json_string_field((const char *)arguments->ptr, arguments->len, "name", &len);
    if (who == NULL) {
        text_result(ret, "`name` must be a string", true);
    } else if (strspn(who, " \t\r\n") == len) {
        text_result(ret, "`name` is empty: say who to greet", true);
    } else {
        char *greeting = malloc(len + 16);
        sprintf(greeting, "Hello, %s!", who);
        text_result(ret, greeting, false);
        free(greeting);
    }
    free(who);
    // The arguments belong to this function: free them.
    plugin_string_free(name);
    plugin_string_free(arguments);
}
