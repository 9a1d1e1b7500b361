// A tiny harness for the interop clients: named checks with a deadline each, a clear line per
// failure, and a closing "N passed, N failed" line. The process exits 1 if any check failed.
import assert from 'node:assert/strict';

export { assert };

let passed = 0;
let failed = 0;
let suite = 'interop';

/** Names the client and transport in every line printed from now on. */
export function setSuite(name) {
    suite = name;
}

/** Runs `fn` as one named check, failing it if it throws or takes longer than `ms`. */
export async function check(name, fn, ms = 30_000) {
    let timer;
    const deadline = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no outcome within ${ms} ms`)), ms);
    });
    try {
        await Promise.race([fn(), deadline]);
        passed++;
        console.log(`ok   ${suite}: ${name}`);
        return true;
    } catch (e) {
        failed++;
        console.log(`FAIL ${suite}: ${name}\n     ${String(e?.message ?? e).replaceAll('\n', '\n     ')}`);
        return false;
    } finally {
        clearTimeout(timer);
    }
}

/** Awaits `promise`, which must reject with a JSON-RPC error of `code`; returns the error. */
export async function rejectsWith(promise, code, what) {
    let result;
    try {
        result = await promise;
    } catch (e) {
        assert.equal(e?.code, code, `${what}: expected JSON-RPC error ${code}, got ${e?.code}: ${e?.message}`);
        return e;
    }
    assert.fail(`${what}: expected JSON-RPC error ${code}, got a result: ${JSON.stringify(result)}`);
}

/** The text of a CallToolResult's content blocks, joined. */
export function text(result) {
    return (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
}

/** The `corral/error` kind of an isError result, if any. */
export function errorKind(result) {
    return result?._meta?.['corral/error']?.kind;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `done` every 20 ms until it holds; throws naming `what` after `ms`. */
export async function until(what, done, ms = 20_000) {
    const deadline = Date.now() + ms;
    while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        await sleep(20);
    }
}

/** Prints the closing line and exits. */
export function finish(extra = '') {
    if (extra && failed) console.log(extra);
    console.log(`${suite}: ${passed} passed, ${failed} failed`);
    process.exit(failed ? 1 : 0);
}

/** Fails the whole run at once, e.g. when the client cannot connect at all. */
export function abort(message, extra = '') {
    failed++;
    console.log(`FAIL ${suite}: ${message}`);
    finish(extra);
}
