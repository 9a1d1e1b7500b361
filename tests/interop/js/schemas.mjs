// Every tool schema the example plugins list passes ajv in strict mode with no warning: what a
// client that validates with ajv (the TypeScript SDK does, through ajv-formats) compiles on
// every tools/list. A schema declaring 2020-12 is compiled by ajv's 2020-12 class, any other by
// its draft-07 default, each with the meta-schema check on.
//
//   node schemas.mjs CORRAL PLUGIN_DIR
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { abort, assert, check, finish, setSuite } from './check.mjs';

setSuite('ajv-strict/schemas');
const [corral, plugins] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: corral, args: ['serve', '--plugins', plugins, '--log-level', 'warn', '--load-wait', '600s'], stderr: 'inherit' });
const client = new Client({ name: 'corral-schemas', version: '1.0.0' });
try {
    await client.connect(transport);
} catch (e) {
    abort(`connect failed: ${e?.message ?? e}`);
}
const { tools } = await client.listTools();

/** What ajv says compiling `schema` in strict mode: its warnings, and the error if it refuses it. */
function complaints(schema) {
    const said = [];
    const logger = { log() {}, warn: (...m) => said.push(`warning: ${m.join(' ')}`), error: (...m) => said.push(`error: ${m.join(' ')}`) };
    const Class = String(schema.$schema ?? '').includes('2020-12') ? Ajv2020 : Ajv;
    const ajv = new Class({ strict: true, allErrors: true, logger });
    addFormats(ajv);
    try {
        ajv.compile(schema);
    } catch (e) {
        said.push(`refused: ${e?.message ?? e}`);
    }
    return said;
}

await check(`the examples list tools (${tools.length})`, async () => assert.ok(tools.length >= 8, tools.map((t) => t.name).join(', ')));
for (const tool of tools) {
    for (const key of ['inputSchema', 'outputSchema']) {
        if (!tool[key]) continue;
        await check(`${tool.name}: ${key} compiles in strict mode without a word`, async () => {
            const said = complaints(tool[key]);
            assert.deepEqual(said, [], `${JSON.stringify(tool[key])}\n${said.join('\n')}`);
        });
    }
}
await client.close();
finish('');
