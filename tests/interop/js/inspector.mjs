// The MCP Inspector's CLI (npm @modelcontextprotocol/inspector 2.x, `--cli`) against corral:
// each check runs one `inspector --cli --format json ...` and reads the JSON it prints, in its
// default era (2025-11-25), with `--protocol-era auto` and with `--protocol-era modern`.
//
//   node inspector.mjs stdio CORRAL PLUGINS_DIR   the Inspector starts `CORRAL serve --plugins PLUGINS_DIR --db :memory:`
//   node inspector.mjs http URL                   the Inspector talks to a running `corral serve --http` at URL
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { abort, assert, check, errorKind, finish, setSuite, text } from './check.mjs';

const [mode, ...rest] = process.argv.slice(2);
setSuite(`inspector-cli/${mode}`);
const pkg = createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector/package.json');
const launcher = join(dirname(pkg), 'clients/launcher/build/index.js');

let target;
if (mode === 'stdio') {
    // Everything after `--` is the server command; the Inspector would take `--log-level` and
    // other flags of corral's for its own if they came before it.
    target = ['--', rest[0], 'serve', '--plugins', rest[1], '--db', ':memory:', '--task-poll-interval', '100ms'];
} else if (mode === 'http') {
    target = ['--server-url', rest[0]];
} else {
    abort(`usage: inspector.mjs stdio CORRAL PLUGINS | http URL (got ${mode})`);
}
// The Inspector keeps state under ~/.mcp-inspector: give it a home of its own.
const home = mkdtempSync(join(tmpdir(), 'corral-inspector-'));

/** Runs the CLI with `args`; returns its exit code and the JSON object it printed. */
function inspector(...args) {
    return inspectorOf(target, ...args);
}

function inspectorOf(server, ...args) {
    const argv = [launcher, '--cli', '--format', 'json', ...args, ...server];
    return new Promise((resolve) => {
        const env = { ...process.env, HOME: home, MCP_INSPECTOR_SECRET_STORE: 'memory' };
        execFile(process.execPath, argv, { env, timeout: 30_000 }, (error, stdout, stderr) => {
            const code = error ? (error.code ?? 'killed') : 0;
            let json;
            try {
                json = JSON.parse(stdout.trim() || stderr.trim().split('\n').pop());
            } catch {
                json = undefined;
            }
            resolve({ code, json, output: `exit ${code}\nstdout: ${stdout}\nstderr: ${stderr.split('\n').slice(-15).join('\n')}` });
        });
    });
}

/** A tool call that must succeed (after `--protocol-era ERA`, if given); returns its CallToolResult. */
async function call(...args) {
    const era = args[0] === '--protocol-era' ? args.splice(0, 2) : [];
    const [tool, ...toolArgs] = args;
    const run = await inspector(...era, '--method', 'tools/call', '--tool-name', tool, ...(toolArgs.length ? ['--tool-arg', ...toolArgs] : []));
    assert.equal(run.code, 0, run.output);
    assert.ok(run.json?.result, run.output);
    return run.json.result;
}

await check('tools/list', async () => {
    const run = await inspector('--method', 'tools/list');
    assert.equal(run.code, 0, run.output);
    const tools = run.json?.result?.tools ?? [];
    assert.deepEqual(tools.map((t) => t.name), ['countdown', 'echo', 'hash_chain', 'tick', 'word_count'], run.output);
    assert.equal(tools[0].execution?.taskSupport, 'required');
});

await check('tools/call echo', async () => {
    assert.equal(text(await call('echo', 'text=hello, corral')), 'hello, corral');
});

await check('tools/call word_count: structured output', async () => {
    assert.deepEqual((await call('word_count', 'text=one two')).structuredContent, { chars: 7, lines: 1, words: 2 });
});

await check('tools/call of a `required` tool: the CLI runs the whole task flow', async () => {
    const result = await call('countdown', 'from=2', 'interval_ms=20');
    assert.equal(text(result), 'counted down from 2');
    assert.ok(result._meta?.['io.modelcontextprotocol/related-task']?.taskId, 'tasks/result carries the related-task id');
});

await check('tools/call with an isError result: exit 5 and the result on stdout', async () => {
    const run = await inspector('--method', 'tools/call', '--tool-name', 'hash_chain', '--tool-arg', 'input=x', 'rounds=100000000');
    assert.equal(run.code, 5, run.output);
    assert.equal(errorKind(run.json?.result), 'fuel-exhausted', run.output);
});

await check('--protocol-era auto: the server/discover probe falls back to initialize', async () => {
    const run = await inspector('--protocol-era', 'auto', '--method', 'tools/call', '--tool-name', 'countdown', '--tool-arg', 'from=1', 'interval_ms=10');
    assert.equal(run.code, 0, run.output);
    assert.equal(text(run.json?.result), 'counted down from 1', run.output);
});

await check('--protocol-era modern: tools/call is served on the 2026-07-28 wire', async () => {
    const run = await inspector('--protocol-era', 'modern', '--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=modern');
    assert.equal(run.code, 0, run.output);
    assert.equal(text(run.json?.result), 'modern', run.output);
    assert.equal(run.json.result.resultType, 'complete', `a 2026-07-28 result carries resultType: ${run.output}`);
    assert.equal(run.json.result._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'corral', run.output);
});

await check('--protocol-era modern: a `required` tool runs as a SEP-2663 task to its result', async () => {
    const result = await call('--protocol-era', 'modern', 'countdown', 'from=2', 'interval_ms=20');
    assert.equal(text(result), 'counted down from 2');
});

await check('--protocol-era modern: an isError result, exit 5 with its kind', async () => {
    const run = await inspector('--protocol-era', 'modern', '--method', 'tools/call', '--tool-name', 'hash_chain', '--tool-arg', 'input=x', 'rounds=100000000');
    assert.equal(run.code, 5, run.output);
    assert.equal(errorKind(run.json?.result), 'fuel-exhausted', run.output);
});

await check("docs/clients.md's `mcpServers` file, as an Inspector --config", async () => {
    const doc = readFileSync(fileURLToPath(new URL('../../../docs/clients.md', import.meta.url)), 'utf8');
    const snippet = doc.match(/```json\n(\{\n  "mcpServers"[^]*?)```/)?.[1];
    assert.ok(snippet, 'no ```json block starting with "mcpServers" in docs/clients.md');
    const config = snippet
        .replaceAll('/path/to/corral/target/release/corral', rest[0])
        .replaceAll('/path/to/corral/plugins/dist', rest[1] ?? '')
        .replaceAll('http://127.0.0.1:8080/mcp', rest[0]);
    const file = join(home, 'mcp.json');
    writeFileSync(file, config);
    // The stdio entry has no --db: corral keeps its tasks under the Inspector's HOME.
    const server = mode === 'stdio' ? 'corral' : 'corral-http';
    const run = await inspectorOf(['--config', file, '--server', server], '--method', 'tools/call', '--tool-name', 'countdown', '--tool-arg', 'from=1', 'interval_ms=10');
    assert.equal(run.code, 0, run.output);
    assert.equal(text(run.json?.result), 'counted down from 1', run.output);
});

if (mode === 'stdio') {
    await check('tools/list follows nextCursor (corral --page-size 2)', async () => {
        const run = await inspectorOf([...target, '--page-size', '2'], '--method', 'tools/list');
        assert.equal(run.code, 0, run.output);
        assert.equal(run.json?.result?.tools?.length, 5, run.output);
    });
}

rmSync(home, { recursive: true, force: true });
finish();
