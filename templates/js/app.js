// `{{name}}`: a corral plugin in JavaScript (QuickJS, built with componentize-qjs --sync).
//
// The export `tools` implements the WIT interface `corral:plugin/tools` (wit/plugin.wit): WIT
// records are plain objects with camelCase fields, `option<T>` is a value or `undefined`, a
// variant is `{ tag, val }`, an enum is its case name as a string. Host functions (`log`,
// `progress`, `cancelled`) are imported from "corral:plugin/host@0.1.0".

import { log } from "corral:plugin/host@0.1.0";
import { greet } from "./greet.js";

const TOOLS = [
  {
    name: "{{tool}}",
    title: "Greet",
    description: "Greets someone by name.",
    // JSON Schema 2020-12 of the arguments, as text; the root must be an object schema.
    inputSchema: JSON.stringify({
      type: "object",
      properties: { name: { type: "string", description: "Who to greet." } },
      required: ["name"],
      additionalProperties: false,
    }),
    outputSchema: undefined,
    annotations: { readOnly: true, openWorld: false },
    taskSupport: "forbidden",
  },
];

function text(message, isError) {
  return { content: [{ tag: "text", val: message }], structured: undefined, isError };
}

export const tools = {
  listTools() {
    return TOOLS;
  },

  // `args` is the JSON text the client sent, already checked against the input schema.
  callTool(name, args) {
    if (name !== "{{tool}}") {
      return text(`unknown tool \`${name}\``, true);
    }
    try {
      const greeting = greet(JSON.parse(args).name);
      log("debug", `greeted: ${greeting}`);
      return text(greeting, false);
    } catch (e) {
      // An isError result: the model reads the message and can try again.
      return text(String(e.message ?? e), true);
    }
  },
};
