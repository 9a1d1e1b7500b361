//! Hostile (and well-behaved) plugin components, written in WAT and lowered by hand.
//!
//! A [`Fixture`] is a list of [`ToolDef`]s plus whatever raw WAT a test wants to add. `build()`
//! lays out the canonical-ABI image of the `list<tool>` that `list-tools` returns and of one canned
//! `call-result` per tool in a single data segment, writes a core module around it and turns it
//! into a component with wit-component, against `wit/plugin.wit` (world `plugin`) or a custom world.
//!
//! ```ignore
//! let spin = Fixture::new()
//!     .tool(ToolDef::new("spin").body("(loop $l (br $l)) unreachable"))
//!     .tool(ToolDef::new("fine").returns_text("fine"))
//!     .build();
//! ```
//!
//! Canonical ABI layouts used here (all align 4; checked by `fixture_selftest` in tests/hostile.rs,
//! which lifts them back through wasmtime):
//!
//! * `tool` (72 bytes): name string @0 (ptr,len) · title option<string> tag @8, string @12 ·
//!   description @20 · input-schema @28 · output-schema option<string> tag @36, string @40 ·
//!   annotations @48 (20 bytes: title option<string> tag @48 string @52, then read-only,
//!   destructive, idempotent, open-world as option<bool> tag+value at @60, @62, @64, @66) ·
//!   task-support u8 @68 · padding to 72.
//! * `call-result` (24 bytes): content list<content> @0 (ptr,len) · structured option<string>
//!   tag @8, string @12 · is-error bool @20.
//! * `content` (44 bytes): case tag u8 @0, payload @4 (case 0 = text(string): ptr @4, len @8).
//! * `list-tools` and `call-tool` return a pointer to their return area: (ptr,len) for the list,
//!   the 24-byte record for the call result.

use std::fmt::Write as _;
use std::path::PathBuf;

use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::Resolve;

/// Export names of the `tools` interface, as the core module spells them.
pub const LIST_TOOLS_EXPORT: &str = "corral:plugin/tools@0.1.0#list-tools";
pub const CALL_TOOL_EXPORT: &str = "corral:plugin/tools@0.1.0#call-tool";
/// Module name of the host imports.
pub const HOST_MODULE: &str = "corral:plugin/host@0.1.0";

/// Where the canned data starts in linear memory (0..BASE stays free as scratch space).
const BASE: u32 = 1024;
const PAGE: u32 = 65536;
/// Free heap the bump allocator starts with (it grows memory when it needs more).
const HEAP_SLACK: u32 = 64 * 1024;

const TOOL_SIZE: u32 = 72;
const CALL_RESULT_SIZE: u32 = 24;
const CONTENT_SIZE: u32 = 44;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TaskSupport {
    #[default]
    Forbidden,
    Optional,
    Required,
}

impl TaskSupport {
    fn discriminant(self) -> u8 {
        match self {
            TaskSupport::Forbidden => 0,
            TaskSupport::Optional => 1,
            TaskSupport::Required => 2,
        }
    }

    /// How the host should publish it as `execution.taskSupport`.
    pub fn as_mcp(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// The WIT `annotations` record; `None` leaves a hint unstated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Annotations {
    pub title: Option<String>,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

/// Bytes a guest hands back as a string.
#[derive(Clone, Debug, PartialEq)]
pub enum Payload {
    /// These exact bytes, placed in the data segment (need not be UTF-8).
    Bytes(Vec<u8>),
    /// `len` zero bytes in never-written memory (zero bytes are valid UTF-8). For huge outputs
    /// without a huge data segment.
    Zeroed(u32),
    /// `len` zero bytes of one region that every `SharedZeroed` payload of the fixture points
    /// into (it is as long as the longest of them): a small guest whose result is huge once the
    /// host has copied each string out.
    SharedZeroed(u32),
}

impl From<&str> for Payload {
    fn from(s: &str) -> Self {
        Payload::Bytes(s.as_bytes().to_vec())
    }
}

impl From<String> for Payload {
    fn from(s: String) -> Self {
        Payload::Bytes(s.into_bytes())
    }
}

impl From<&[u8]> for Payload {
    fn from(b: &[u8]) -> Self {
        Payload::Bytes(b.to_vec())
    }
}

/// One `content` block. Only `text` is needed by the hostile tests.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    Text(Payload),
}

/// The canned `call-result` a tool returns once its body has run.
#[derive(Clone, Debug, PartialEq)]
pub struct CallResult {
    pub content: Vec<Content>,
    pub structured: Option<Payload>,
    pub is_error: bool,
}

impl CallResult {
    /// One text block, no structured output, not an error.
    pub fn text(text: impl Into<Payload>) -> Self {
        CallResult { content: vec![Content::Text(text.into())], structured: None, is_error: false }
    }

    /// No content blocks at all.
    pub fn empty() -> Self {
        CallResult { content: vec![], structured: None, is_error: false }
    }

    pub fn structured(mut self, json: impl Into<Payload>) -> Self {
        self.structured = Some(json.into());
        self
    }

    /// Builder-style, named after the result's `isError` field it sets.
    #[allow(clippy::wrong_self_convention)]
    pub fn is_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }
}

/// One tool of a fixture plugin: what `list-tools` says about it, and what `call-tool` does.
#[derive(Clone, Debug)]
pub struct ToolDef {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: String,
    pub output_schema: Option<String>,
    pub annotations: Annotations,
    pub task_support: TaskSupport,
    /// WAT instructions run by `call-tool` before it returns `result`. They must leave the stack
    /// empty (or end in `unreachable`/`return`). In scope: params `$name_ptr $name_len $args_ptr
    /// $args_len`, locals `$i $j` (i32) and `$k` (i64), imports the fixture declared (e.g.
    /// `$cancelled`), functions added with [`Fixture::funcs`].
    pub body: String,
    pub result: CallResult,
}

impl ToolDef {
    /// A tool with input schema `{"type":"object"}`, task support `forbidden`, an empty body and
    /// the result text `"<name> ok"`.
    pub fn new(name: &str) -> Self {
        ToolDef {
            name: name.to_string(),
            title: None,
            description: format!("test tool {name}"),
            input_schema: r#"{"type":"object"}"#.to_string(),
            output_schema: None,
            annotations: Annotations::default(),
            task_support: TaskSupport::Forbidden,
            body: String::new(),
            result: CallResult::text(format!("{name} ok")),
        }
    }

    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.to_string());
        self
    }

    pub fn description(mut self, description: &str) -> Self {
        self.description = description.to_string();
        self
    }

    pub fn input_schema(mut self, schema: &str) -> Self {
        self.input_schema = schema.to_string();
        self
    }

    pub fn output_schema(mut self, schema: &str) -> Self {
        self.output_schema = Some(schema.to_string());
        self
    }

    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }

    pub fn task_support(mut self, task_support: TaskSupport) -> Self {
        self.task_support = task_support;
        self
    }

    /// WAT instructions to run when the tool is called (see [`ToolDef::body`]).
    pub fn body(mut self, wat: &str) -> Self {
        self.body = wat.to_string();
        self
    }

    pub fn returns(mut self, result: CallResult) -> Self {
        self.result = result;
        self
    }

    pub fn returns_text(self, text: impl Into<Payload>) -> Self {
        self.returns(CallResult::text(text))
    }
}

/// A plugin component under construction.
#[derive(Clone, Debug, Default)]
pub struct Fixture {
    tools: Vec<ToolDef>,
    list_body: String,
    imports: Vec<String>,
    funcs: Vec<String>,
    world: Option<(String, String)>,
}

impl Fixture {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn tool(mut self, tool: ToolDef) -> Self {
        self.tools.push(tool);
        self
    }

    /// WAT instructions `list-tools` runs before returning the list (e.g. `"unreachable"`).
    pub fn list_body(mut self, wat: &str) -> Self {
        self.list_body = wat.to_string();
        self
    }

    /// Imports the host's `cancelled: func() -> bool` as `$cancelled` (core type `() -> i32`).
    pub fn import_cancelled(self) -> Self {
        self.import(&format!(r#"(import "{HOST_MODULE}" "cancelled" (func $cancelled (result i32)))"#))
    }

    /// Imports the host's `log: func(level, message)` as `$log` (core type `(i32 i32 i32)`).
    pub fn import_log(self) -> Self {
        self.import(&format!(r#"(import "{HOST_MODULE}" "log" (func $log (param i32 i32 i32)))"#))
    }

    /// A raw WAT `(import ...)` field for the core module.
    pub fn import(mut self, wat: &str) -> Self {
        self.imports.push(wat.to_string());
        self
    }

    /// Raw WAT module fields (helper functions, globals) callable from tool bodies.
    pub fn funcs(mut self, wat: &str) -> Self {
        self.funcs.push(wat.to_string());
        self
    }

    /// Embeds metadata for `world` of the extra WIT package `wit` (pushed on top of
    /// `wit/plugin.wit`, so it may refer to `corral:plugin/...@0.1.0`) instead of world `plugin`.
    pub fn world(mut self, wit: &str, world: &str) -> Self {
        self.world = Some((wit.to_string(), world.to_string()));
        self
    }

    /// Makes the component import `other:thing/gizmo@0.1.0` (function `poke`), which no host
    /// provides.
    pub fn import_unknown_interface(self) -> Self {
        self.world(
            r#"
            package other:thing@0.1.0;

            interface gizmo {
                poke: func();
            }

            world bad {
                import gizmo;
                export corral:plugin/tools@0.1.0;
            }
            "#,
            "bad",
        )
        .import(r#"(import "other:thing/gizmo@0.1.0" "poke" (func $poke))"#)
    }

    /// The core module's WAT text.
    pub fn wat(&self) -> String {
        let mut image = Image::new(BASE);

        // list<tool>
        let tools_ptr = image.alloc(TOOL_SIZE * self.tools.len() as u32, 4);
        for (i, tool) in self.tools.iter().enumerate() {
            image.write_tool(tools_ptr + i as u32 * TOOL_SIZE, tool);
        }
        let list_ret = image.alloc(8, 4);
        image.write_u32(list_ret, tools_ptr);
        image.write_u32(list_ret + 4, self.tools.len() as u32);

        // One canned call-result per tool, and each tool's name for dispatch.
        let mut dispatch = Vec::new();
        for tool in &self.tools {
            let (name_ptr, name_len) = image.put(tool.name.as_bytes(), 1);
            let result_ptr = image.write_call_result(&tool.result);
            dispatch.push((name_ptr, name_len, result_ptr, tool.body.as_str()));
        }

        image.finish();
        let data_end = image.end();
        let heap = align(image.zeroed_end(), 8);
        let pages = (heap + HEAP_SLACK).div_ceil(PAGE);

        let mut wat = String::from("(module\n");
        for import in &self.imports {
            writeln!(wat, "  {import}").unwrap();
        }
        writeln!(wat, "  (memory (export \"memory\") {pages})").unwrap();
        writeln!(wat, "  (global $heap (mut i32) (i32.const {heap}))").unwrap();
        writeln!(wat, "  ;; canned data {BASE}..{data_end}").unwrap();
        writeln!(wat, "  (data (i32.const {BASE}) \"{}\")", escape(&image.bytes)).unwrap();
        wat.push_str(RUNTIME_WAT);

        writeln!(wat, "  (func (export \"{LIST_TOOLS_EXPORT}\") (result i32)").unwrap();
        writeln!(wat, "    {}", self.list_body).unwrap();
        writeln!(wat, "    (i32.const {list_ret}))").unwrap();

        writeln!(
            wat,
            "  (func (export \"{CALL_TOOL_EXPORT}\") (param $name_ptr i32) (param $name_len i32) \
             (param $args_ptr i32) (param $args_len i32) (result i32)"
        )
        .unwrap();
        writeln!(wat, "    (local $i i32) (local $j i32) (local $k i64)").unwrap();
        for (name_ptr, name_len, result_ptr, body) in dispatch {
            writeln!(
                wat,
                "    (if (call $name_is (local.get $name_ptr) (local.get $name_len) \
                 (i32.const {name_ptr}) (i32.const {name_len}))\n      (then\n        {body}\n        \
                 (return (i32.const {result_ptr}))))"
            )
            .unwrap();
        }
        writeln!(wat, "    ;; unknown tool name\n    unreachable)").unwrap();

        for func in &self.funcs {
            writeln!(wat, "  {func}").unwrap();
        }
        wat.push_str(")\n");
        wat
    }

    /// The component's bytes. Panics (with the WAT) if anything fails to assemble or validate.
    pub fn build(&self) -> Vec<u8> {
        let wat = self.wat();
        self.try_build(&wat).unwrap_or_else(|e| panic!("building fixture failed: {e:?}\n--- WAT ---\n{wat}"))
    }

    fn try_build(&self, wat: &str) -> anyhow::Result<Vec<u8>> {
        let mut module = wat::parse_str(wat)?;
        let mut resolve = Resolve::default();
        let (pkg, _) = resolve.push_path(wit_dir())?;
        let world = match &self.world {
            None => resolve.select_world(&[pkg], Some("plugin"))?,
            Some((wit, world)) => {
                let extra = resolve.push_str("fixture-extra.wit", wit)?;
                resolve.select_world(&[extra], Some(world))?
            }
        };
        wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)?;
        ComponentEncoder::default().validate(true).module(&module)?.encode()
    }
}

/// `wit/` of this crate.
pub fn wit_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("wit")
}

/// `n` bytes of deterministic noise that are neither a module nor a component.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Helpers every fixture module carries: `$name_is` for dispatch and a bump `cabi_realloc` that
/// grows memory when it runs out.
const RUNTIME_WAT: &str = r#"
  (func $name_is (param $p i32) (param $l i32) (param $q i32) (param $m i32) (result i32)
    (local $i i32)
    (if (i32.ne (local.get $l) (local.get $m)) (then (return (i32.const 0))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $l)))
        (if (i32.ne (i32.load8_u (i32.add (local.get $p) (local.get $i)))
                    (i32.load8_u (i32.add (local.get $q) (local.get $i))))
          (then (return (i32.const 0))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 1))
  (func (export "cabi_realloc") (param $old i32) (param $old_size i32) (param $align i32) (param $new_size i32) (result i32)
    (local $p i32) (local $end i32) (local $have i32)
    (local.set $p
      (i32.and
        (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
        (i32.sub (i32.const 0) (local.get $align))))
    (local.set $end (i32.add (local.get $p) (local.get $new_size)))
    (local.set $have (i32.shl (memory.size) (i32.const 16)))
    (if (i32.gt_u (local.get $end) (local.get $have))
      (then
        (if (i32.eq
              (memory.grow
                (i32.shr_u
                  (i32.add (i32.sub (local.get $end) (local.get $have)) (i32.const 65535))
                  (i32.const 16)))
              (i32.const -1))
          (then unreachable))))
    (global.set $heap (local.get $end))
    (if (local.get $old)
      (then (memory.copy (local.get $p) (local.get $old) (local.get $old_size))))
    (local.get $p))
"#;

fn align(x: u32, a: u32) -> u32 {
    x.div_ceil(a) * a
}

fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 3);
    for b in bytes {
        write!(s, "\\{b:02x}").unwrap();
    }
    s
}

/// The canned data, as it will sit in linear memory from `base` on; zeroed payloads go after it.
struct Image {
    base: u32,
    bytes: Vec<u8>,
    zeroed: Vec<u32>,
    /// (address of a ptr field, index of its region in `zeroed`)
    patches: Vec<(u32, usize)>,
    /// Index in `zeroed` of the region `SharedZeroed` payloads share, once there is one.
    shared: Option<usize>,
}

impl Image {
    fn new(base: u32) -> Self {
        Image { base, bytes: Vec::new(), zeroed: Vec::new(), patches: Vec::new(), shared: None }
    }

    fn end(&self) -> u32 {
        self.base + self.bytes.len() as u32
    }

    fn zeroed_start(&self) -> u32 {
        align(self.end(), 8)
    }

    fn zeroed_end(&self) -> u32 {
        self.zeroed_start() + self.zeroed.iter().sum::<u32>()
    }

    /// Reserves `size` bytes (zero-filled) at the given alignment; returns the address.
    fn alloc(&mut self, size: u32, align_to: u32) -> u32 {
        let at = align(self.end(), align_to);
        self.bytes.resize((at + size - self.base) as usize, 0);
        at
    }

    fn put(&mut self, data: &[u8], align_to: u32) -> (u32, u32) {
        let at = self.alloc(data.len() as u32, align_to);
        let off = (at - self.base) as usize;
        self.bytes[off..off + data.len()].copy_from_slice(data);
        (at, data.len() as u32)
    }

    /// Writes a string's (ptr,len) at `at`.
    fn write_payload(&mut self, at: u32, payload: &Payload) {
        match payload {
            Payload::Bytes(b) => {
                let (p, l) = self.put(b, 1);
                self.write_u32(at, p);
                self.write_u32(at + 4, l);
            }
            Payload::Zeroed(len) => {
                // Zeroed regions live above the data, whose end is not known yet: remember the
                // region and patch the pointer in `finish`.
                self.zeroed.push(*len);
                self.patches.push((at, self.zeroed.len() - 1));
                self.write_u32(at + 4, *len);
            }
            Payload::SharedZeroed(len) => {
                let index = *self.shared.get_or_insert_with(|| {
                    self.zeroed.push(0);
                    self.zeroed.len() - 1
                });
                self.zeroed[index] = self.zeroed[index].max(*len);
                self.patches.push((at, index));
                self.write_u32(at + 4, *len);
            }
        }
    }

    /// Points the zeroed payloads at their final addresses.
    fn finish(&mut self) {
        let start = self.zeroed_start();
        for (at, index) in std::mem::take(&mut self.patches) {
            let region = start + self.zeroed[..index].iter().sum::<u32>();
            self.write_u32(at, region);
        }
    }

    fn write_u8(&mut self, addr: u32, v: u8) {
        self.bytes[(addr - self.base) as usize] = v;
    }

    fn write_u32(&mut self, addr: u32, v: u32) {
        let off = (addr - self.base) as usize;
        self.bytes[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    fn write_str(&mut self, at: u32, s: &str) {
        let (p, l) = self.put(s.as_bytes(), 1);
        self.write_u32(at, p);
        self.write_u32(at + 4, l);
    }

    /// option<string>: tag u8 @0, string @4.
    fn write_opt_str(&mut self, at: u32, s: Option<&str>) {
        match s {
            None => self.write_u8(at, 0),
            Some(s) => {
                self.write_u8(at, 1);
                self.write_str(at + 4, s);
            }
        }
    }

    /// option<bool>: tag u8 @0, value u8 @1.
    fn write_opt_bool(&mut self, at: u32, b: Option<bool>) {
        match b {
            None => self.write_u8(at, 0),
            Some(b) => {
                self.write_u8(at, 1);
                self.write_u8(at + 1, b as u8);
            }
        }
    }

    fn write_tool(&mut self, at: u32, tool: &ToolDef) {
        self.write_str(at, &tool.name);
        self.write_opt_str(at + 8, tool.title.as_deref());
        self.write_str(at + 20, &tool.description);
        self.write_str(at + 28, &tool.input_schema);
        self.write_opt_str(at + 36, tool.output_schema.as_deref());
        let a = &tool.annotations;
        self.write_opt_str(at + 48, a.title.as_deref());
        self.write_opt_bool(at + 60, a.read_only);
        self.write_opt_bool(at + 62, a.destructive);
        self.write_opt_bool(at + 64, a.idempotent);
        self.write_opt_bool(at + 66, a.open_world);
        self.write_u8(at + 68, tool.task_support.discriminant());
    }

    /// Writes a call-result record; returns its address.
    fn write_call_result(&mut self, result: &CallResult) -> u32 {
        let content_ptr = self.alloc(CONTENT_SIZE * result.content.len() as u32, 4);
        for (i, content) in result.content.iter().enumerate() {
            let at = content_ptr + i as u32 * CONTENT_SIZE;
            match content {
                Content::Text(payload) => {
                    self.write_u8(at, 0);
                    self.write_payload(at + 4, payload);
                }
            }
        }
        let rec = self.alloc(CALL_RESULT_SIZE, 4);
        self.write_u32(rec, content_ptr);
        self.write_u32(rec + 4, result.content.len() as u32);
        match &result.structured {
            None => self.write_u8(rec + 8, 0),
            Some(payload) => {
                self.write_u8(rec + 8, 1);
                self.write_payload(rec + 12, payload);
            }
        }
        self.write_u8(rec + 20, result.is_error as u8);
        rec
    }
}
