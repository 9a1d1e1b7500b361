// The small helper layer of a corral plugin in JavaScript (contract corral:plugin@0.3.0).
//
// It stands between the WIT export `tools` and the tools you write, so that a tool is a name, a
// declared shape of its arguments and a `run(args, ctx)` function:
//
// - typed arguments: `args` declares each field (`type`, `description`, `default`, `optional`,
//   `minimum`, `maximum`, `enum`); the input schema the host publishes is made from it, and the
//   arguments are checked against it again before `run` sees them, so `run` gets the defaults
//   filled in and a wrong value is an `isError` result that names the field;
// - `ctx.progress(done, total, message)`, `ctx.log(level, message)`, `ctx.cancelled()`;
// - `ctx.checkpoint(state)` stores `state` (any JSON value) with the task, durably, before it
//   returns; `ctx.resume()` gives the last one back when the task runs again after a crash
//   (`undefined` otherwise). Each checkpoint is a safe retry boundary: what the tool did after
//   its last checkpoint is done again, so checkpoint *after* the work the state records.
//
// This file imports nothing: app.js hands it the host's functions, and `testHost()` below is a
// stand-in for them, so `node --test` runs the tools (a crash and its resume included) without
// wasm. QuickJS has no TextEncoder, hence the small UTF-8 codec at the end.

/** A mistake in the arguments, naming the field: the model reads it and can try again. */
export class ArgumentError extends Error {}

const TYPES = ["string", "integer", "number", "boolean"];

/**
 * A tool: `{ name, title, description, args, taskSupport, annotations, run }`. `args` maps each
 * argument to its declaration, e.g. `{ who: { type: "string", description: "..." } }`.
 * `taskSupport` is "forbidden" (the default), "optional" or "required".
 */
export function tool(spec) {
  for (const [field, decl] of Object.entries(spec.args ?? {})) {
    if (!TYPES.includes(decl.type)) {
      throw new Error(`tool \`${spec.name}\`: argument \`${field}\` has type ${JSON.stringify(decl.type)}; use one of ${TYPES.join(", ")}`);
    }
  }
  return { taskSupport: "forbidden", annotations: {}, args: {}, ...spec };
}

/** The JSON Schema of a declared shape: what the host publishes and checks first. */
export function schemaOf(args) {
  const properties = {};
  const required = [];
  for (const [field, decl] of Object.entries(args)) {
    const { optional, ...schema } = decl;
    properties[field] = schema;
    if (!optional && decl.default === undefined) required.push(field);
  }
  return { type: "object", properties, required, additionalProperties: false };
}

/** `value` (the parsed arguments) checked against the shape, with its defaults filled in. */
export function parseArgs(args, value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ArgumentError("the arguments must be a JSON object");
  }
  for (const field of Object.keys(value)) {
    if (!(field in args)) {
      const known = Object.keys(args).map((f) => `\`${f}\``).join(", ") || "none";
      throw new ArgumentError(`unknown argument \`${field}\`; this tool takes ${known}`);
    }
  }
  const typed = {};
  for (const [field, decl] of Object.entries(args)) {
    const given = value[field];
    if (given === undefined) {
      if (decl.default !== undefined) typed[field] = decl.default;
      else if (!decl.optional) throw new ArgumentError(`argument \`${field}\` is missing: ${decl.description ?? `a ${decl.type}`}`);
      continue;
    }
    typed[field] = checked(field, decl, given);
  }
  return typed;
}

function checked(field, decl, given) {
  const got = JSON.stringify(given);
  const fits = {
    string: typeof given === "string",
    integer: Number.isInteger(given),
    number: typeof given === "number" && Number.isFinite(given),
    boolean: typeof given === "boolean",
  }[decl.type];
  if (!fits) throw new ArgumentError(`argument \`${field}\` must be ${decl.type === "integer" ? "an" : "a"} ${decl.type}, got ${got}`);
  if (decl.enum && !decl.enum.includes(given)) throw new ArgumentError(`argument \`${field}\` must be one of ${JSON.stringify(decl.enum)}, got ${got}`);
  if (decl.minimum !== undefined && given < decl.minimum) throw new ArgumentError(`argument \`${field}\` must be at least ${decl.minimum}, got ${got}`);
  if (decl.maximum !== undefined && given > decl.maximum) throw new ArgumentError(`argument \`${field}\` must be at most ${decl.maximum}, got ${got}`);
  return given;
}

/**
 * The WIT export `tools` for `list`, a list of `tool(...)`s, over `host`: the host's functions
 * (`log`, `progress`, `cancelled` from corral:plugin/host, `checkpoint`, `resume` from
 * corral:plugin/checkpoints), or `testHost()`.
 */
export function serve(list, host) {
  const byName = new Map(list.map((t) => [t.name, t]));
  return {
    listTools() {
      return list.map((t) => ({
        name: t.name,
        title: t.title,
        description: t.description,
        inputSchema: JSON.stringify(schemaOf(t.args)),
        outputSchema: t.outputSchema === undefined ? undefined : JSON.stringify(t.outputSchema),
        annotations: t.annotations,
        taskSupport: t.taskSupport,
      }));
    },

    callTool(name, argsText) {
      const t = byName.get(name);
      if (!t) return result(`unknown tool \`${name}\``, undefined, true);
      let out;
      try {
        out = t.run(parseArgs(t.args, JSON.parse(argsText)), context(host));
      } catch (e) {
        // A crash of the test double is the host dying: it must not become a result.
        if (e instanceof Crash) throw e;
        // An isError result: the model reads the message and can try again.
        return result(String(e?.message ?? e), undefined, true);
      }
      return typeof out === "string" ? result(out, undefined, false) : result(out.text, out.structured, false);
    },
  };
}

function result(text, structured, isError) {
  return {
    content: [{ tag: "text", val: text }],
    structured: structured === undefined ? undefined : JSON.stringify(structured),
    isError,
  };
}

/** What `run` gets besides its arguments. */
function context(host) {
  return {
    log: (level, message) => host.log(level, message),
    progress: (done, total, message) => host.progress(done, total, message),
    cancelled: () => host.cancelled(),
    // Throws (an Error with the host's reason) when the state is over the plugin's cap.
    checkpoint: (state) => host.checkpoint(utf8Encode(JSON.stringify(state))),
    resume() {
      const bytes = host.resume();
      return bytes === null || bytes === undefined ? undefined : JSON.parse(utf8Decode(bytes));
    },
  };
}

/** What `testHost({ crashAfter: n })` throws at the `n`th checkpoint: the host died there. */
export class Crash extends Error {}

/**
 * The host's functions for tests, recording what a tool reports (`logs`, `reports` of
 * progress, `checkpoints` as bytes). With `crashAfter: n` the `n`th
 * checkpoint is stored and then the call stops with a `Crash`, as if the host died right after
 * it; call again on the same double and `resume()` returns the last checkpoint, as a task run
 * again after a crash does.
 */
export function testHost({ crashAfter, capBytes = 1 << 20 } = {}) {
  const host = {
    logs: [],
    reports: [],
    checkpoints: [],
    resumed: undefined,
    crashAfter,
    log(level, message) {
      host.logs.push([level, message]);
    },
    progress(done, total, message) {
      host.reports.push([done, total, message]);
    },
    cancelled: () => false,
    checkpoint(bytes) {
      if (bytes.length > capBytes) throw new Error(`a checkpoint holds at most ${capBytes} bytes; this one has ${bytes.length}`);
      host.checkpoints.push(bytes);
      if (host.checkpoints.length === host.crashAfter) {
        host.crashAfter = undefined;
        host.resumed = bytes;
        throw new Crash(`crashed after checkpoint ${host.checkpoints.length}`);
      }
    },
    resume: () => host.resumed ?? null,
  };
  return host;
}

function utf8Encode(text) {
  const bytes = [];
  for (const ch of text) {
    const c = ch.codePointAt(0);
    if (c < 0x80) bytes.push(c);
    else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return new Uint8Array(bytes);
}

function utf8Decode(bytes) {
  let text = "";
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    const n = b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
    let c = n === 1 ? b : b & (0xff >> (n + 1));
    for (let k = 1; k < n; k++) c = (c << 6) | (bytes[i + k] & 63);
    text += String.fromCodePoint(c);
    i += n;
  }
  return text;
}
