// The TypeScript SDK's Client (npm @modelcontextprotocol/sdk 1.32.x) connected over stdio to
// `corral dev` while plugin projects are edited under it: each save's output is seen on the same
// connection, a broken save brings a log message and leaves the old code serving, and the fix
// brings the new code. Nothing waits a fixed time: each step waits for corral's log message
// saying the swap (or the failure) happened.
//
//   node dev.mjs CORRAL CACHE_DIR rust:PROJECT js:PROJECT ...
//
// Each PROJECT was made by `corral new NAME --lang LANG` (and built once, so the first build is
// quick); its greeting tool is edited in place.
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LoggingMessageNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { abort, assert, check, finish, setSuite, text } from './check.mjs';

setSuite('ts-sdk/corral-dev');
const [corral, cacheDir, ...specs] = process.argv.slice(2);
const projects = specs.map((spec) => {
    const [lang, dir] = spec.split(/:(.*)/s);
    const name = basename(dir);
    const source = { rust: 'src/lib.rs', js: 'tools.js' }[lang];
    if (!source) abort(`unknown language in ${spec}`);
    return { lang, dir, name, tool: name.replaceAll('-', '_'), file: join(dir, source) };
});

let serverLog = '';
const transport = new StdioClientTransport({
    command: corral,
    args: ['dev', '--cache-dir', cacheDir, ...projects.map((p) => p.dir)],
    // The builds need the toolchains' variables (CARGO_TARGET_DIR, COMPONENTIZE_QJS, ...) as well.
    env: { ...getDefaultEnvironment(), ...process.env, CORRAL_LOAD_WAIT: '600s' },
    stderr: 'pipe',
});
transport.stderr.on('data', (chunk) => (serverLog += chunk));
const tail = () => `corral's stderr (last lines):\n${serverLog.split('\n').slice(-30).join('\n')}`;

const client = new Client({ name: 'corral-dev-ts', version: '1.0.0' });
const logs = [];
const waiters = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
    for (const w of [...waiters]) {
        if (w.test(n.params)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(n.params);
        }
    }
});
const listChangedWaiters = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => listChangedWaiters.splice(0).forEach((resolve) => resolve()));
/** The next notifications/tools/list_changed (it may come just before or after the swap's log message). */
const nextListChanged = () => new Promise((resolve) => listChangedWaiters.push(resolve));
/** The next log message from corral dev that `test` accepts. */
const nextLog = (test) => new Promise((resolve) => waiters.push({ test, resolve }));

try {
    await client.connect(transport);
} catch (e) {
    abort(`connect failed: ${e?.message ?? e}`, tail());
}

const greet = async (p) => text(await client.callTool({ name: p.tool, arguments: { name: 'Ada' } }));

/** Rewrites the greeting in `p`'s source: `Hello,` becomes `to`; `broken` adds a syntax error. */
function edit(p, to, broken = false) {
    const source = readFileSync(p.file, 'utf8').replace(/(Hello|Edit \d+),/, `${to},`);
    const breakage = { rust: '\nfn broken( {\n', js: '\nexport const broken = ;\n' }[p.lang];
    writeFileSync(p.file, broken ? source + breakage : source.replace(breakage, ''));
}
const swapped = (p) => (m) => m.logger === 'corral dev' && m.level === 'info' && String(m.data).startsWith(`${p.name}: serving the new build`);
const failed = (p) => (m) => m.logger === 'corral dev' && m.level === 'error' && String(m.data).startsWith(`${p.name}: build failed`);

await check('the first builds are served', async () => {
    const { tools } = await client.listTools();
    for (const p of projects) {
        assert.ok(tools.some((t) => t.name === p.tool), `${p.tool} is not in ${tools.map((t) => t.name)}`);
        assert.equal(await greet(p), 'Hello, Ada!');
    }
}, 600_000);

for (const p of projects) {
    await check(`${p.lang}: a save is served on the same connection, and tools/list_changed is sent`, async () => {
        const done = nextLog(swapped(p));
        const announced = nextListChanged();
        edit(p, 'Edit 1');
        await done;
        assert.equal(await greet(p), 'Edit 1, Ada!');
        // Fails by the check's timeout if it never comes.
        await announced;
        const { tools } = await client.listTools();
        assert.ok(tools.some((t) => t.name === p.tool), 'the tool keeps its name');
    }, 600_000);

    await check(`${p.lang}: a broken save logs the compiler's error and the last good build keeps serving`, async () => {
        const done = nextLog(failed(p));
        edit(p, 'Edit 2', true);
        const message = String((await done).data);
        assert.match(message, { rust: /error/, js: /rror/ }[p.lang], message);
        assert.ok(message.length < 4000, `the error is trimmed (${message.length} characters)`);
        assert.equal(await greet(p), 'Edit 1, Ada!');
    }, 600_000);

    await check(`${p.lang}: the fix is served`, async () => {
        const done = nextLog(swapped(p));
        edit(p, 'Edit 3');
        await done;
        assert.equal(await greet(p), 'Edit 3, Ada!');
    }, 600_000);
}

await client.close();
finish(tail());
