// The TypeScript SDK's Client (npm @modelcontextprotocol/sdk 1.32.x) against corral serving the
// contract 0.2.0 fixture (tests/guests/conformance): resources, subscriptions, prompts, completion,
// and elicitation and sampling answered by the SDK's request handlers, in plain calls and inside
// tasks (client.experimental.tasks.callToolStream, which calls tasks/result on `input_required`).
//
//   node surface.mjs stdio CORRAL PLUGINS_DIR     starts `CORRAL serve --plugins PLUGINS_DIR --db :memory: ...`
//   node surface.mjs http URL                     talks to a running `corral serve --http` at URL (.../mcp)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    CallToolResultSchema,
    CreateMessageRequestSchema,
    ElicitRequestSchema,
    ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { abort, assert, check, finish, setSuite, text, until } from './check.mjs';

const [mode, ...rest] = process.argv.slice(2);
setSuite(`surface/${mode}`);

let transport;
let serverLog = '';
if (mode === 'stdio') {
    const [corral, plugins] = rest;
    transport = new StdioClientTransport({
        command: corral,
        args: ['serve', '--plugins', plugins, '--db', ':memory:', '--task-poll-interval', '100ms'],
        stderr: 'pipe',
    });
    transport.stderr.on('data', (chunk) => (serverLog += chunk));
} else if (mode === 'http') {
    transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else {
    abort(`usage: surface.mjs stdio CORRAL PLUGINS | http URL (got ${mode})`);
}
const tail = () => (serverLog ? `corral's stderr (last lines):\n${serverLog.split('\n').slice(-20).join('\n')}` : '');

const client = new Client({ name: 'corral-interop-surface', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {} } });
const sideErrors = [];
client.onerror = (e) => sideErrors.push(String(e?.message ?? e));

// Every request the host sends, as the handlers saw them.
const elicited = [];
const sampled = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicited.push(request.params);
    return { action: 'accept', content: { answer: `answer ${elicited.length}` } };
});
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    sampled.push(request.params);
    return { role: 'assistant', content: { type: 'text', text: 'sampled' }, model: 'interop-model', stopReason: 'endTurn' };
});
const updates = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));

try {
    await client.connect(transport);
} catch (e) {
    abort(`connect failed: ${e?.message ?? e}`, tail());
}

const RELATED = 'io.modelcontextprotocol/related-task';
const tasks = client.experimental.tasks;
async function drain(params, options) {
    const messages = [];
    for await (const message of tasks.callToolStream(params, CallToolResultSchema, options)) {
        messages.push(message);
    }
    return messages;
}
const last = (messages) => messages[messages.length - 1];

await check('initialize: resources (subscribe), prompts and completions', async () => {
    const caps = client.getServerCapabilities();
    assert.equal(caps?.resources?.subscribe, true, JSON.stringify(caps));
    assert.ok(caps?.prompts && caps?.completions, JSON.stringify(caps));
});

await check('resources: list, templates, read text, binary and templated', async () => {
    const { resources } = await client.listResources();
    assert.deepEqual(resources.map((r) => r.uri), ['test://static-binary', 'test://static-text', 'test://watched-resource']);
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.ok(resourceTemplates.some((t) => t.uriTemplate === 'test://template/{id}/data'), JSON.stringify(resourceTemplates));
    const read = await client.readResource({ uri: 'test://static-text' });
    assert.equal(read.contents[0].text, 'This is the content of the static text resource.');
    const binary = await client.readResource({ uri: 'test://static-binary' });
    assert.ok(binary.contents[0].blob.length > 0);
    const templated = await client.readResource({ uri: 'test://template/9/data' });
    assert.ok(templated.contents[0].text.includes('Data for ID: 9'), templated.contents[0].text);
});

await check('subscriptions: an update after subscribing, none after unsubscribing', async () => {
    await client.subscribeResource({ uri: 'test://watched-resource' });
    await client.callTool({ name: 'touch', arguments: { uri: 'test://watched-resource' } });
    await until('the update', () => updates.length > 0);
    assert.deepEqual(updates, ['test://watched-resource']);
    await client.unsubscribeResource({ uri: 'test://watched-resource' });
    await client.callTool({ name: 'touch', arguments: { uri: 'test://watched-resource' } });
    // A barrier: an update that must come, announced after any the touch above caused.
    await client.subscribeResource({ uri: 'test://static-text' });
    await client.callTool({ name: 'touch', arguments: { uri: 'test://static-text' } });
    await until("the barrier's update", () => updates.includes('test://static-text'));
    await client.unsubscribeResource({ uri: 'test://static-text' });
    assert.deepEqual(updates, ['test://watched-resource', 'test://static-text']);
});

await check('prompts and completion', async () => {
    const { prompts } = await client.listPrompts();
    assert.equal(prompts.length, 4);
    const got = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
    assert.equal(got.messages[0].content.text, "Prompt with arguments: arg1='a', arg2='b'");
    const completed = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'tes' } });
    assert.deepEqual(completed.completion.values, ['test', 'testing', 'tested']);
});

await check('a plain call elicits through the SDK handler', async () => {
    const before = elicited.length;
    const result = await client.callTool({ name: 'ask_user', arguments: { message: 'Plain?' } });
    assert.equal(elicited.length, before + 1, 'asked exactly once');
    assert.equal(elicited[before].message, 'Plain?');
    assert.equal(elicited[before]._meta?.[RELATED], undefined);
    assert.deepEqual(JSON.parse(text(result)), { action: 'accept', content: { answer: `answer ${before + 1}` } });
});

await check('a plain call samples through the SDK handler', async () => {
    const result = await client.callTool({ name: 'ask_model', arguments: { message: 'Plain sample' } });
    assert.deepEqual(JSON.parse(text(result)), { text: 'sampled', model: 'interop-model', stopReason: 'endTurn' });
    assert.equal(sampled.at(-1).messages[0].content.text, 'Plain sample');
});

await check('a task elicits once with related-task, and callToolStream ends with the answer', async () => {
    const before = elicited.length;
    const messages = await drain({ name: 'ask_user', arguments: { message: 'In a task?' } }, { task: {} });
    const created = messages.find((m) => m.type === 'taskCreated')?.task;
    assert.ok(created, `no taskCreated in ${JSON.stringify(messages)}`);
    const end = last(messages);
    assert.equal(end.type, 'result', JSON.stringify(end));
    assert.equal(elicited.length, before + 1, `asked exactly once: ${JSON.stringify(elicited.slice(before))}`);
    assert.equal(elicited[before]._meta?.[RELATED]?.taskId, created.taskId);
    assert.deepEqual(JSON.parse(text(end.result)), { action: 'accept', content: { answer: `answer ${before + 1}` } });
    assert.equal((await tasks.getTask(created.taskId)).status, 'completed');
});

await check('a task samples once with related-task', async () => {
    const before = sampled.length;
    const messages = await drain({ name: 'ask_model', arguments: { message: 'Task sample' } }, { task: {} });
    const end = last(messages);
    assert.equal(end.type, 'result', JSON.stringify(end));
    assert.equal(sampled.length, before + 1);
    assert.ok(sampled[before]._meta?.[RELATED]?.taskId, JSON.stringify(sampled[before]));
    assert.equal(JSON.parse(text(end.result)).text, 'sampled');
});

await check('the SDK reported nothing on the side', async () => {
    assert.deepEqual(sideErrors, []);
});

await client.close();
finish(tail());
