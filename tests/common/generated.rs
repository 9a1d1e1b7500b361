//! A WAT tool body that returns a large, checkable text: what the tests of results kept by
//! reference generate and read back page by page.

/// Byte `i` of every generated result: letters whose phase shifts every 1000 bytes, so a page
/// out of place, lost or repeated changes the whole.
pub fn expected(len: u32) -> String {
    (0..len).map(|i| char::from(b'a' + ((i + i / 1000) % 26) as u8)).collect()
}

/// A tool body that writes `len` bytes of [`expected`] into fresh memory and returns them as one
/// text block (the call-result record built in the scratch area below the canned data).
pub fn generator(len: u32) -> String {
    let pages = len / 65536 + 1;
    format!(
        "(local.set $i (i32.mul (memory.size) (i32.const 65536)))
         (drop (memory.grow (i32.const {pages})))
         (local.set $j (i32.const 0))
         (block $done (loop $fill
           (br_if $done (i32.ge_u (local.get $j) (i32.const {len})))
           (i32.store8 (i32.add (local.get $i) (local.get $j))
             (i32.add (i32.const 97) (i32.rem_u (i32.add (local.get $j) (i32.div_u (local.get $j) (i32.const 1000))) (i32.const 26))))
           (local.set $j (i32.add (local.get $j) (i32.const 1)))
           (br $fill)))
         (i32.store8 (i32.const 64) (i32.const 0))
         (i32.store (i32.const 68) (local.get $i))
         (i32.store (i32.const 72) (i32.const {len}))
         (i32.store (i32.const 0) (i32.const 64))
         (i32.store (i32.const 4) (i32.const 1))
         (i32.store8 (i32.const 8) (i32.const 0))
         (i32.store8 (i32.const 20) (i32.const 0))
         (return (i32.const 0))"
    )
}
