// Runs the code snippets of docs/clients.md (the TypeScript SDK and both Python SDKs) as they are
// written there, with the placeholder paths replaced. Over HTTP, the statement just above a
// `// or: ...` / `# or: ...` line is swapped for that line, as a reader would do.
//
//   node docs.mjs stdio CORRAL PLUGINS_DIR
//   node docs.mjs http URL
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { abort, assert, check, finish, setSuite } from './check.mjs';

const [mode, ...rest] = process.argv.slice(2);
setSuite(`docs/${mode}`);
if (mode !== 'stdio' && mode !== 'http') abort(`usage: docs.mjs stdio CORRAL PLUGINS | http URL (got ${mode})`);

const here = fileURLToPath(new URL('..', import.meta.url));
const doc = readFileSync(join(here, '../../docs/clients.md'), 'utf8');
/** The body of the ```LANG block that follows `heading`. */
function snippet(heading, lang) {
    const section = doc.slice(doc.indexOf(heading));
    const found = section.match(new RegExp('```' + lang + '\\n([^]*?)```'));
    if (doc.indexOf(heading) < 0 || !found) abort(`no \`\`\`${lang} block under "${heading}" in docs/clients.md`);
    return found[1];
}

/** The snippet for this transport, with real paths. */
function adapt(code) {
    if (mode === 'stdio') code = code.replaceAll('/path/to/corral/target/release/corral', rest[0]).replaceAll('/path/to/corral/plugins/dist', rest[1]);
    const lines = code.split('\n');
    const out = [];
    for (const line of lines) {
        const or = line.match(/^(\s*)(?:\/\/|#) or: (.*)$/);
        if (!or) {
            out.push(line);
            continue;
        }
        if (mode === 'stdio') continue;
        // Drop the statement above: back to its first line, at the same indentation.
        const indent = or[1];
        while (out.length) {
            const prev = out.pop();
            if (prev.startsWith(indent) && /^[^\s)\]}]/.test(prev.slice(indent.length))) break;
        }
        out.push(indent + or[2].replaceAll('http://127.0.0.1:8080/mcp', rest[0]));
    }
    return out.join('\n');
}

const scratch = join(here, 'node_modules', '.corral-snippets');
mkdirSync(scratch, { recursive: true });
const dir = mkdtempSync(join(scratch, 'run-'));

/** Runs `file` with `program`; returns its stdout, failing on a non-zero exit. */
function run(program, file) {
    return new Promise((resolve, reject) => {
        // The snippets start corral without --db: its tasks go under this HOME, not the user's.
        execFile(program, [file], { timeout: 60_000, cwd: dir, env: { ...process.env, HOME: dir } }, (error, stdout, stderr) => {
            if (error) reject(new Error(`${file}: exit ${error.code}\n${stdout}\n${stderr.split('\n').slice(-15).join('\n')}`));
            else resolve(stdout);
        });
    });
}

/** A Python snippet, as the body of an async main(), printing `extra` at its end. */
function pythonMain(code, extra) {
    const body = adapt(code).trimEnd().split('\n');
    const indent = body[body.length - 1].match(/^\s*/)[0];
    body.push(indent + extra);
    return ['import anyio', '', 'async def main():', ...body.map((l) => '    ' + l), '', 'anyio.run(main)', ''].join('\n');
}

await check('TypeScript SDK: connect, echo, a task through callToolStream', async () => {
    const file = join(dir, 'ts.mjs');
    writeFileSync(file, adapt(snippet('## TypeScript SDK', 'js')) + '\nconsole.log(JSON.stringify(echo));\nawait client.close();\n');
    const out = await run(process.execPath, file);
    assert.match(out, /counted down from 3/, out);
    assert.match(out, /"text":"hi"/, out);
});

await check('Python SDK 1.30: connect, echo, a task through session.experimental', async () => {
    const file = join(dir, 'mcp1.py');
    writeFileSync(file, pythonMain(snippet('## Python SDK 1.30', 'python'), 'print(result)'));
    const out = await run(join(here, '.venv-mcp1/bin/python'), file);
    assert.match(out, /counted down from 3/, out);
    assert.match(out, /text='hi'/, out);
});

await check('Python SDK 2.x: connect, echo', async () => {
    const file = join(dir, 'mcp2.py');
    writeFileSync(file, pythonMain(snippet('## Python SDK 2.x', 'python'), 'pass'));
    const out = await run(join(here, '.venv-mcp2/bin/python'), file);
    assert.match(out, /text='hi'/, out);
});

rmSync(dir, { recursive: true, force: true });
finish();
