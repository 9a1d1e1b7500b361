// `slug`: a corral plugin in JavaScript (QuickJS, built with componentize-qjs --sync).
//
// The export `tools` implements the WIT interface `corral:plugin/tools`: WIT records are plain
// objects with camelCase fields, `option<T>` is a value or `undefined`, a variant is
// `{ tag, val }`, an enum is its case name as a string. Host functions are imported from
// `corral:plugin/host@0.1.0`.

import { log } from "corral:plugin/host@0.1.0";
import { slugify } from "./slugify.js";

const tools_ = [
  {
    name: "slugify",
    title: "Slugify",
    description:
      "Turns `text` into a URL slug: lowercase ASCII letters and digits joined by `separator` " +
      "(accents are dropped: `Crème brûlée!` becomes `creme-brulee`).",
    inputSchema: JSON.stringify({
      type: "object",
      properties: {
        text: { type: "string", description: "The text to turn into a slug." },
        separator: {
          type: "string", enum: ["-", "_", "."], default: "-",
          description: "What joins the words (default `-`).",
        },
      },
      required: ["text"],
      additionalProperties: false,
    }),
    outputSchema: JSON.stringify({
      type: "object",
      properties: { slug: { type: "string" }, words: { type: "integer", minimum: 0 } },
      required: ["slug", "words"],
    }),
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    taskSupport: "forbidden",
  },
];

function text(message, isError) {
  return { content: [{ tag: "text", val: message }], structured: undefined, isError };
}

export const tools = {
  listTools() {
    return tools_;
  },

  // `args` is the JSON text the client sent, already checked against the input schema.
  callTool(name, args) {
    if (name !== "slugify") {
      return text(`unknown tool \`${name}\`; this plugin has \`slugify\``, true);
    }
    const { text: input, separator } = JSON.parse(args);
    const result = slugify(input, separator);
    if (result.words === 0) {
      // A failure the model can fix: it reads this text.
      return text("`text` has no letters or digits to make a slug from", true);
    }
    log("debug", `slugify: ${result.words} words`);
    const json = JSON.stringify(result);
    return { content: [{ tag: "text", val: result.slug }], structured: json, isError: false };
  },
};
