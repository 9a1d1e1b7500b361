// Clients of the 2026-07-28 era against corral: the TypeScript client 2.4
// (npm @modelcontextprotocol/client) in its `auto` mode and pinned to 2026-07-28, and
// @modelcontextprotocol/ext-tasks 0.2.2 on top of it in its SEP-2663 ("v2") mode: a task created,
// polled to its end, one cancelled mid-run, the adaptive `optional` path both ways, and input:
// a task that asks (input_required, answered by tasks/update) and a plain call that asks (an
// input-required result, answered by the retried request).
//
//   node modern.mjs stdio CORRAL PLUGINS_DIR   the client starts `CORRAL serve --plugins PLUGINS_DIR ...`
//   node modern.mjs http URL                   talks to a running `corral serve --http` serving PLUGINS_DIR
//
// PLUGINS_DIR holds the ticker plugin twice (run.sh makes it): `ticker` with `task-after = "60s"`,
// so its `optional` tool `tick` always answers inline, and a copy under `namespace = "late"` with
// `task-after = "50ms"`, so `late_tick` running for seconds always becomes a task. The manifest
// knob makes both paths deterministic, whatever the machine's load. It also holds the 0.3.0 test
// guest `tests/guests/mrtr` under `namespace = "ask"`: tools that ask the client for input.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createApplicationInputHandler, createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';
import { abort, assert, check, finish, rejectsWith, setSuite, sleep, text } from './check.mjs';

const [mode, ...rest] = process.argv.slice(2);
setSuite(`ts-client-2.4/${mode}`);
if (mode !== 'stdio' && mode !== 'http') abort(`usage: modern.mjs stdio CORRAL PLUGINS | http URL (got ${mode})`);

const TASKS = 'io.modelcontextprotocol/tasks';
const clientInfo = { name: 'corral-interop-ts2', version: '1.0.0' };
let serverLog = '';
const tail = () => (serverLog ? `corral's stderr (last lines):\n${serverLog.split('\n').slice(-20).join('\n')}` : '');

/** A transport of the kind the SDK's users build: its own stdio child, or the HTTP endpoint. */
function transport() {
    if (mode === 'http') return new StreamableHTTPClientTransport(new URL(rest[0]));
    const t = new StdioClientTransport({
        command: rest[0],
        args: ['serve', '--plugins', rest[1], '--db', ':memory:', '--task-poll-interval', '50ms'],
        stderr: 'pipe',
    });
    t.stderr?.on('data', (chunk) => (serverLog += chunk));
    return t;
}

/** A connected client in `versionNegotiation` mode `negotiation`, with what it reported aside. */
async function connect(negotiation, capabilities = {}) {
    const client = new Client(clientInfo, { capabilities, versionNegotiation: { mode: negotiation } });
    const sideErrors = [];
    client.onerror = (e) => sideErrors.push(String(e?.message ?? e));
    const t = transport();
    await client.connect(t);
    return { client, transport: t, sideErrors };
}

/**
 * The raw request path ext-tasks needs for SEP-2663 traffic (its README: "rawDispatch must use
 * the host coordinator that owns request IDs and response matching"). Over HTTP every modern
 * request is its own POST, so a fetch with the era's headers is the whole coordinator; over stdio
 * it shares the client's pipe: requests get ids of their own (`ext-N`) and their responses are
 * taken off the transport before the SDK client sees them.
 */
function rawDispatcher(connection) {
    let next = 0;
    if (mode === 'http') {
        return async (request) => {
            const body = { ...request, jsonrpc: '2.0', id: `ext-${++next}` };
            const params = body.params ?? {};
            const name = params.name ?? params.taskId ?? params.uri;
            const headers = {
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                'mcp-protocol-version': params._meta['io.modelcontextprotocol/protocolVersion'],
                'mcp-method': body.method,
                ...(name === undefined ? {} : { 'mcp-name': String(name) }),
            };
            const response = await fetch(rest[0], { method: 'POST', headers, body: JSON.stringify(body) });
            const raw = await response.text();
            // A JSON body, or an SSE stream whose last `data:` line is the answer.
            const lines = raw.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
            const answer = (response.headers.get('content-type') ?? '').includes('event-stream') ? lines.find((m) => m.id === body.id) : JSON.parse(raw);
            return 'error' in answer ? { kind: 'error', error: answer.error } : { kind: 'result', result: answer.result };
        };
    }
    const pending = new Map();
    const t = connection.transport;
    const sdkOnMessage = t.onmessage;
    t.onmessage = (message, extra) => {
        const waiter = typeof message?.id === 'string' ? pending.get(message.id) : undefined;
        if (waiter && ('result' in message || 'error' in message)) {
            pending.delete(message.id);
            return waiter(message);
        }
        return sdkOnMessage?.(message, extra);
    };
    return (request) =>
        new Promise((resolve, reject) => {
            const id = `ext-${++next}`;
            pending.set(id, (m) => resolve('error' in m ? { kind: 'error', error: m.error } : { kind: 'result', result: m.result }));
            t.send({ ...request, jsonrpc: '2.0', id }).catch(reject);
        });
}

/** An outcome for a failure message: its error's message and cause, which JSON leaves out. */
const describe = (outcome) => `${JSON.stringify(outcome)}\nerror: ${outcome.error?.message}\ncause: ${outcome.error?.cause?.message ?? outcome.error?.cause}`;

/** What the input handler was asked: each question's message and how its answer went back. */
const asked = [];

/**
 * An ext-tasks session in its SEP-2663 mode over a client pinned to 2026-07-28. It declares
 * elicitation and answers every form with `{name: "answer to MESSAGE"}` (ext-tasks routes the
 * answer: a retried request for a plain call, `tasks/update` for a task).
 */
async function taskSession() {
    const connection = await connect({ pin: '2026-07-28' });
    const session = createTaskSessionFromClient(connection.client, {
        endpointId: `corral-${mode}`,
        rawDispatch: rawDispatcher(connection),
        v2RequestFraming: { protocolVersion: '2026-07-28', clientInfo, clientCapabilities: { elicitation: {} } },
        onInputRequest: createApplicationInputHandler({
            elicitation: (request, context) => {
                asked.push({ message: request.params.message, delivery: context.delivery });
                return { action: 'accept', content: { name: `answer to ${request.params.message}` } };
            },
            sampling: () => {
                throw new Error('no sampling in this suite');
            },
            roots: () => ({ roots: [] }),
        }),
    });
    return { ...connection, session };
}

for (const negotiation of ['auto', { pin: '2026-07-28' }]) {
    const label = negotiation === 'auto' ? 'auto' : 'pinned 2026-07-28';
    let connection;
    try {
        connection = await connect(negotiation);
    } catch (e) {
        abort(`connect (${label}) failed: ${e?.message ?? e}`, tail());
    }
    const { client, sideErrors } = connection;

    await check(`${label}: server/discover picks the 2026-07-28 era, corral named in _meta`, async () => {
        assert.equal(client.getProtocolEra(), 'modern');
        const discover = client.getDiscoverResult();
        assert.ok(discover?.supportedVersions?.includes('2026-07-28'), JSON.stringify(discover));
        assert.ok(discover.supportedVersions.includes('2025-11-25'), 'a dual-era host lists both versions');
        assert.deepEqual(discover.capabilities?.extensions?.[TASKS], {}, 'the tasks extension is advertised exactly as {}');
        assert.equal(client.getServerVersion()?.name, 'corral');
    });

    await check(`${label}: tools/list`, async () => {
        // The client's 2026-07-28 Tool type has no `execution` (tasks left the core), so the
        // task policy corral sends is not shown here; ext-tasks reads it below.
        const { tools } = await client.listTools();
        const names = tools.map((t) => t.name);
        assert.deepEqual(names.filter((n) => !n.startsWith('ask_')), ['countdown', 'late_countdown', 'late_tick', 'tick']);
        assert.ok(names.includes('ask_multi_input'), JSON.stringify(names));
    });

    await check(`${label}: tools/call of an optional tool without the tasks extension answers inline`, async () => {
        const result = await client.callTool({ name: 'late_tick', arguments: { count: 2, interval_ms: 150 } });
        assert.equal(text(result), 'ticked 2 times', JSON.stringify(result));
    });

    await check(`${label}: a required tool without the tasks extension is -32021 naming it`, async () => {
        const e = await rejectsWith(client.callTool({ name: 'countdown', arguments: { from: 1, interval_ms: 0 } }), -32021, 'countdown');
        assert.ok(e.data?.requiredCapabilities?.extensions?.[TASKS], JSON.stringify(e.data));
    });

    await check(`${label}: subscriptions/listen is acknowledged and closes cleanly`, async () => {
        const subscription = await client.listen({ toolsListChanged: true });
        await subscription.close();
    });

    await check(`${label}: nothing the client could not place`, async () => {
        assert.deepEqual(sideErrors, []);
    });
    await client.close();
}

let tasks;
try {
    tasks = await taskSession();
} catch (e) {
    abort(`ext-tasks session failed: ${e?.message ?? e}`, tail());
}
const { session } = tasks;

await check('ext-tasks: the session speaks SEP-2663 (v2) with cancellation', async () => {
    assert.equal(session.capabilities.execution, true, JSON.stringify(session.capabilities));
    assert.equal(session.capabilities.cancellation, true, JSON.stringify(session.capabilities));
});

await check('ext-tasks: a required tool becomes a task, polled to `completed`', async () => {
    const execution = await session.callTool('countdown', { from: 2, interval_ms: 50 });
    assert.equal(execution.kind, 'task');
    assert.ok(execution.handle.taskId, 'no task id');
    const statuses = [];
    const { outcome } = await execution.settle({ onEvent: (e) => e.type === 'task' && statuses.push(e.task.status) });
    assert.equal(outcome.status, 'completed', describe(outcome));
    assert.equal(text(outcome.result), 'counted down from 2');
});

await check('ext-tasks: optional, short: answered inline (no task)', async () => {
    const execution = await session.callTool('tick', { count: 2, interval_ms: 10 });
    assert.equal(execution.kind, 'immediate');
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'completed', describe(outcome));
    assert.equal(text(outcome.result), 'ticked 2 times');
});

await check('ext-tasks: optional, past task-after: the running call becomes a task and completes', async () => {
    const execution = await session.callTool('late_tick', { count: 8, interval_ms: 100 });
    assert.equal(execution.kind, 'task');
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'completed', describe(outcome));
    assert.equal(text(outcome.result), 'ticked 8 times');
});

await check('ext-tasks: tasks/cancel mid-run ends the task `cancelled`', async () => {
    const execution = await session.callTool('late_countdown', { from: 200, interval_ms: 100 });
    assert.equal(execution.kind, 'task');
    await execution.cancel();
    // Cancellation is eventual (the extension's rule): corral's is done within a tick.
    const controller = session.task(execution.handle.taskId);
    let view = await controller.snapshot();
    for (let i = 0; i < 50 && view.status === 'working'; i++) {
        await sleep(100);
        view = await controller.snapshot();
    }
    assert.equal(view.status, 'cancelled', JSON.stringify(view));
});

await check('ext-tasks: a task that asks turns input_required, tasks/update answers it, it completes', async () => {
    asked.length = 0;
    const execution = await session.callTool('ask_multi_input', {});
    assert.equal(execution.kind, 'task');
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'completed', describe(outcome));
    assert.equal(text(outcome.result), 'Answers: answer to First question and answer to Second question');
    assert.deepEqual(asked.map((a) => a.delivery).sort(), ['task-update', 'task-update'], JSON.stringify(asked));
});

await check('ext-tasks: a plain call that asks gets an input-required result and the retry completes it', async () => {
    asked.length = 0;
    const execution = await session.callTool('ask_test_input_required_result_elicitation', {});
    assert.equal(execution.kind, 'immediate');
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'completed', describe(outcome));
    assert.equal(text(outcome.result), 'Hello, answer to What is your name?!');
    assert.deepEqual(asked, [{ message: 'What is your name?', delivery: 'request-retry' }]);
});

await session.close();
await tasks.client.close();
finish(tail());
