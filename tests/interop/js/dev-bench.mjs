// Save → the client's next call answered by the new code, through `corral dev` and the
// TypeScript SDK over stdio (BENCHMARKS.md, "The development loop"). For each project, EDITS
// saves of its greeting; each is timed from the write to the answer of the first call that
// returns the new text, and split by corral dev's own report into build (the build command),
// compile (wasmtime) and swap (the rest of the reload: list-tools, checks, the catalog swap).
//
//   node dev-bench.mjs CORRAL CACHE_DIR EDITS LANG:PROJECT... [-- corral dev flags]
//
// LANG is rust, js, python or c (which file holds the greeting); each PROJECT was made by
// `corral new` and built once.
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const [corral, cacheDir, edits, ...specs] = dash < 0 ? argv : argv.slice(0, dash);
const extra = dash < 0 ? [] : argv.slice(dash + 1);
const sources = { rust: 'src/lib.rs', js: 'tools.js', python: 'tools.py', c: 'greet.c' };
const projects = specs.map((spec) => {
    const [lang, dir] = spec.split(/:(.*)/s);
    const name = basename(dir);
    return { lang, dir, name, tool: name.replaceAll('-', '_'), file: join(dir, sources[lang]) };
});

let serverLog = '';
const transport = new StdioClientTransport({
    command: corral,
    args: ['dev', '--cache-dir', cacheDir, ...extra, ...projects.map((p) => p.dir)],
    env: { ...getDefaultEnvironment(), ...process.env, CORRAL_LOAD_WAIT: '900s' },
    stderr: 'pipe',
});
transport.stderr.on('data', (chunk) => (serverLog += chunk));
const client = new Client({ name: 'corral-dev-bench', version: '1.0.0' });
const waiters = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    for (const w of [...waiters]) {
        if (w.test(n.params)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(n.params);
        }
    }
});
const nextLog = (test) => new Promise((resolve) => waiters.push({ test, resolve }));
await client.connect(transport);
await client.listTools();

const seconds = (text) => {
    const m = /^([\d.]+) (ms|s)$/.exec(text.trim());
    return m ? Number(m[1]) / (m[2] === 'ms' ? 1000 : 1) : NaN;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const p of projects) {
    const rows = [];
    for (let i = 1; i <= Number(edits); i++) {
        const source = readFileSync(p.file, 'utf8').replace(/(Hello|Edit \d+),/, `Edit ${i},`);
        const mine = (m) => m.logger === 'corral dev' && String(m.data).startsWith(`${p.name}: `);
        const swapped = nextLog((m) => mine(m) && (m.level === 'error' || String(m.data).startsWith(`${p.name}: serving the new build`)));
        const started = performance.now();
        writeFileSync(p.file, source);
        const message = String((await swapped).data);
        const m = /built in ([\d.]+ m?s), compiled in ([\d.]+ m?s), swapped in ([\d.]+ m?s)/.exec(message);
        if (!m) throw new Error(`${p.name}: ${message}\n${serverLog.split('\n').slice(-20).join('\n')}`);
        const result = await client.callTool({ name: p.tool, arguments: { name: 'Ada' } });
        const text = result.content.map((c) => c.text).join('');
        if (text !== `Edit ${i}, Ada!`) throw new Error(`${p.name}: the call answered ${JSON.stringify(text)}`);
        rows.push({ total: (performance.now() - started) / 1000, build: seconds(m[1]), compile: seconds(m[2]), swap: seconds(m[3]) });
    }
    const col = (k) => median(rows.map((r) => r[k])).toFixed(3);
    console.log(`${p.lang.padEnd(7)} ${p.name.padEnd(14)} n=${rows.length}  save→new answer p50 ${col('total')} s  build ${col('build')} s  compile ${col('compile')} s  swap ${col('swap')} s`);
}
await client.close();
