// The TypeScript SDK's Client (npm @modelcontextprotocol/sdk 1.32.x) against corral and the example
// plugins: plain calls, progress, logging, and the experimental tasks API
// (client.experimental.tasks: callToolStream, getTask, getTaskResult, listTasks, cancelTask).
//
//   node ts-sdk.mjs stdio CORRAL PLUGINS_DIR     starts `CORRAL serve --plugins PLUGINS_DIR --db :memory: ...`
//   node ts-sdk.mjs http URL                     talks to a running `corral serve --http` at URL (.../mcp)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { abort, assert, check, errorKind, finish, rejectsWith, setSuite, sleep, text, until } from './check.mjs';

const [mode, ...rest] = process.argv.slice(2);
setSuite(`ts-sdk/${mode}`);

let transport;
let serverLog = '';
if (mode === 'stdio') {
    const [corral, plugins] = rest;
    // The SDK passes the server only HOME, LOGNAME, PATH, SHELL, TERM and USER: everything
    // corral needs comes as flags (the task database is in memory, not in the user's data dir).
    transport = new StdioClientTransport({
        command: corral,
        args: ['serve', '--plugins', plugins, '--db', ':memory:', '--task-poll-interval', '100ms'],
        stderr: 'pipe',
    });
    transport.stderr.on('data', (chunk) => (serverLog += chunk));
} else if (mode === 'http') {
    transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else {
    abort(`usage: ts-sdk.mjs stdio CORRAL PLUGINS | http URL (got ${mode})`);
}
const tail = () => (serverLog ? `corral's stderr (last lines):\n${serverLog.split('\n').slice(-20).join('\n')}` : '');

const client = new Client({ name: 'corral-interop-ts', version: '1.0.0' });
// Anything the SDK reports on the side (an unknown progress token, a response to an unknown id,
// a message that does not parse) means corral sent something the client could not place.
const sideErrors = [];
client.onerror = (e) => sideErrors.push(String(e?.message ?? e));
const logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));

try {
    await client.connect(transport);
} catch (e) {
    abort(`connect failed: ${e?.message ?? e}`, tail());
}

const tasks = client.experimental.tasks;
/** Runs callToolStream to its end; returns the messages it yielded. */
async function drain(params, options) {
    const messages = [];
    for await (const message of tasks.callToolStream(params, CallToolResultSchema, options)) {
        messages.push(message);
    }
    return messages;
}
const created = (messages) => messages.find((m) => m.type === 'taskCreated')?.task;
const last = (messages) => messages[messages.length - 1];
const seen = {}; // taskId -> the status this script expects it to end in

await check('initialize: corral answers and advertises tools and tasks', async () => {
    assert.equal(client.getServerVersion()?.name, 'corral');
    const caps = client.getServerCapabilities();
    assert.ok(caps?.tools, `no tools capability in ${JSON.stringify(caps)}`);
    assert.ok(caps?.tasks?.requests?.tools?.call, `no tasks.requests.tools.call in ${JSON.stringify(caps)}`);
    assert.ok(caps?.tasks?.list && caps?.tasks?.cancel, `tasks.list/cancel missing in ${JSON.stringify(caps)}`);
});

await check('ping', async () => {
    assert.deepEqual(await client.ping(), {});
});

await check('tools/list: the example tools with their task support', async () => {
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? 'forbidden']));
    assert.deepEqual(support, {
        countdown: 'required',
        echo: 'forbidden',
        hash_chain: 'optional',
        tick: 'optional',
        word_count: 'forbidden',
    });
});

await check('tools/call echo', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hello, corral' } });
    assert.equal(result.isError ?? false, false);
    assert.equal(text(result), 'hello, corral');
});

await check('tools/call word_count: structured output passes the SDK output-schema check', async () => {
    const result = await client.callTool({ name: 'word_count', arguments: { text: 'one two\nthree' } });
    assert.deepEqual(result.structuredContent, { words: 3, lines: 2, chars: 13 });
});

await check('tools/call with invalid arguments: an isError result naming the problem', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { text: 42 } });
    assert.equal(result.isError, true, JSON.stringify(result));
    assert.equal(errorKind(result), 'invalid-arguments', JSON.stringify(result));
});

await check('tools/call of an unknown tool: -32602', async () => {
    await rejectsWith(client.callTool({ name: 'no_such_tool', arguments: {} }), -32602, 'unknown tool');
});

await check('plain call with progress and log messages (tick, no task)', async () => {
    await client.setLoggingLevel('debug');
    logs.length = 0;
    const progress = [];
    const before = sideErrors.length;
    // corral thins out progress reports less than 20 ms apart (all but the last): tick slower.
    const result = await client.callTool({ name: 'tick', arguments: { count: 3, interval_ms: 40 } }, undefined, {
        onprogress: (p) => progress.push([p.progress, p.total]),
    });
    assert.equal(text(result), 'ticked 3 times');
    // The SDK runs notification handlers a microtask after it settles responses, so a progress
    // notification read in the same chunk as the response (corral sends it first) is reported
    // as having an unknown token instead of reaching onprogress. Count those as received, once
    // all three are in one way or the other.
    await until('the three progress notifications', () => progress.length + (sideErrors.length - before) >= 3);
    const late = sideErrors.splice(before);
    for (const e of late) assert.match(e, /progress notification for an unknown token.*"progress":3,"total":3/);
    assert.deepEqual([...progress, ...late.map(() => [3, 3])], [[1, 3], [2, 3], [3, 3]]);
    assert.ok(logs.some((l) => l.logger === 'ticker' && String(l.data).includes('ticked 3 times')), `log: ${JSON.stringify(logs)}`);
});

await check('plain call cancelled through an AbortSignal (notifications/cancelled): it stops, silently', async () => {
    const controller = new AbortController();
    let progress = 0;
    const before = sideErrors.length;
    const call = client.callTool({ name: 'tick', arguments: { count: 100, interval_ms: 50 } }, undefined, {
        signal: controller.signal,
        onprogress: () => (progress++, controller.abort('enough')),
    });
    await assert.rejects(call, /enough/);
    assert.equal(progress, 1);
    // The SDK forgets the request when it cancels: a later progress notification or a response
    // for it would show up here as "unknown token" or "unknown message ID".
    await sleep(300);
    assert.deepEqual(sideErrors.slice(before), [], 'corral kept talking about the cancelled call');
});

await check('task that completes, with progress (tick, callToolStream, ttl asked)', async () => {
    const progress = [];
    const messages = await drain({ name: 'tick', arguments: { count: 3, interval_ms: 50 } }, {
        task: { ttl: 60_000 },
        onprogress: (p) => progress.push(p.progress),
    });
    const task = created(messages);
    assert.ok(task, `no taskCreated in ${JSON.stringify(messages)}`);
    assert.equal(task.status, 'working');
    assert.equal(task.ttl, 60_000);
    seen[task.taskId] = 'completed';
    const end = last(messages);
    assert.equal(end.type, 'result', JSON.stringify(end));
    assert.equal(text(end.result), 'ticked 3 times');
    assert.ok(messages.some((m) => m.type === 'taskStatus' && m.task.status === 'completed'));
    assert.deepEqual(progress, [1, 2, 3], 'progress notifications of the task');
    const again = await tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(text(again), 'ticked 3 times');
    assert.equal(again._meta?.['io.modelcontextprotocol/related-task']?.taskId, task.taskId);
});

await check('required tool: callToolStream adds `task: {}` (no ttl) by itself (countdown)', async () => {
    const messages = await drain({ name: 'countdown', arguments: { from: 2, interval_ms: 20 } });
    const task = created(messages);
    assert.ok(task, `no taskCreated in ${JSON.stringify(messages)}`);
    assert.ok(Number.isInteger(task.ttl) && task.ttl > 0, `ttl chosen by corral: ${task.ttl}`);
    seen[task.taskId] = 'completed';
    assert.equal(text(last(messages).result), 'counted down from 2', JSON.stringify(last(messages)));
});

await check('required tool without a task: the SDK refuses it, and corral answers -32601 when sent', async () => {
    await rejectsWith(client.callTool({ name: 'countdown', arguments: { from: 1 } }), -32600, 'SDK guard');
    const raw = client.request({ method: 'tools/call', params: { name: 'countdown', arguments: { from: 1 } } }, CallToolResultSchema);
    await rejectsWith(raw, -32601, 'corral');
});

await check('forbidden tool with a task: -32601, and the stream ends with that error', async () => {
    const messages = await drain({ name: 'echo', arguments: { text: 'x' } }, { task: {} });
    assert.equal(messages.length, 1, JSON.stringify(messages));
    assert.equal(messages[0].type, 'error');
    assert.equal(messages[0].error.code, -32601, messages[0].error.message);
});

await check('task that fails: isError ends it `failed`, tasks/result returns the error result', async () => {
    // hash.toml gives 2e9 fuel: 1e8 SHA-256 rounds run out of it within a second.
    const messages = await drain({ name: 'hash_chain', arguments: { input: 'x', rounds: 100_000_000 } }, { task: { ttl: 60_000 } });
    const task = created(messages);
    assert.ok(task, `no taskCreated in ${JSON.stringify(messages)}`);
    seen[task.taskId] = 'failed';
    const end = last(messages);
    assert.equal(end.type, 'error', JSON.stringify(end));
    assert.match(end.error.message, /failed/);
    const status = await tasks.getTask(task.taskId);
    assert.equal(status.status, 'failed');
    assert.ok(status.statusMessage, 'a failed task says why in statusMessage');
    const result = await tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(result.isError, true);
    assert.equal(errorKind(result), 'fuel-exhausted', JSON.stringify(result));
});

await check('task cancelled mid-run: cancelTask answers `cancelled`, the stream ends, no more progress', async () => {
    let progressed;
    const running = new Promise((resolve) => (progressed = resolve));
    const progress = [];
    const started = Date.now();
    let cancelled;
    const stream = tasks.callToolStream({ name: 'tick', arguments: { count: 100, interval_ms: 100 } }, CallToolResultSchema, {
        task: { ttl: 60_000 },
        onprogress: (p) => {
            progress.push(p.progress);
            progressed();
        },
    });
    const messages = [];
    for await (const message of stream) {
        messages.push(message);
        if (message.type === 'taskCreated') {
            seen[message.task.taskId] = 'cancelled';
            // Cancel once the plugin has really started ticking.
            cancelled = running.then(() => tasks.cancelTask(message.task.taskId));
        }
    }
    const task = created(messages);
    assert.ok(task, `no taskCreated in ${JSON.stringify(messages)}`);
    const answer = await cancelled;
    assert.equal(answer.status, 'cancelled', JSON.stringify(answer));
    assert.equal(last(messages).type, 'error');
    assert.match(last(messages).error.message, /cancelled/);
    assert.ok(Date.now() - started < 8_000, 'the task stopped long before its 10 s of ticks');
    const count = progress.length;
    await sleep(400);
    assert.equal(progress.length, count, 'progress kept coming after the cancel');
    assert.equal((await tasks.getTask(task.taskId)).status, 'cancelled');
    const result = await tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(result.isError, true);
    assert.equal(errorKind(result), 'cancelled', JSON.stringify(result));
});

await check('listTasks: every task of this session, in its final status', async () => {
    const found = {};
    let cursor;
    do {
        const page = await tasks.listTasks(cursor);
        for (const t of page.tasks) found[t.taskId] = t.status;
        cursor = page.nextCursor;
    } while (cursor);
    assert.equal(Object.keys(seen).length, 4, `tasks this script made: ${JSON.stringify(seen)}`);
    for (const [id, status] of Object.entries(seen)) {
        assert.equal(found[id], status, `task ${id} in tasks/list: ${JSON.stringify(found)}`);
    }
});

await check('task errors: unknown task -32602, cancelling a finished task -32602', async () => {
    await rejectsWith(tasks.getTask('no-such-task'), -32602, 'tasks/get of an unknown id');
    const done = Object.keys(seen).find((id) => seen[id] === 'completed');
    await rejectsWith(tasks.cancelTask(done), -32602, 'tasks/cancel of a completed task');
});

await check('the SDK reported no stray message (unknown progress token or response id)', async () => {
    assert.deepEqual(sideErrors, []);
});

await client.close();
finish(tail());
