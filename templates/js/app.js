// `{{name}}`: a corral plugin in JavaScript (QuickJS, built with componentize-qjs --sync) on
// contract corral:plugin@0.3.0 (wit/plugin.wit).
//
// The export `tools` implements the WIT interface `corral:plugin/tools`. corral.js turns the
// tools of tools.js into it, over the host's functions imported here: WIT records are plain
// objects with camelCase fields, `option<T>` is a value or `undefined` (`null` when returned by
// the host), `list<u8>` a Uint8Array, and a `result` error is thrown as an Error.

import { log, progress, cancelled } from "corral:plugin/host@0.3.0";
import { checkpoint, resume } from "corral:plugin/checkpoints@0.3.0";
import { serve } from "./corral.js";
import { TOOLS } from "./tools.js";

export const tools = serve(TOOLS, { log, progress, cancelled, checkpoint, resume });
