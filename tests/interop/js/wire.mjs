// Client behaviours seen on the wire that none of the pinned clients happens to show, checked
// with raw JSON-RPC: string ids, unknown capability keys, `task: {}` without ttl, a server started
// with almost no environment, an older MCP-Protocol-Version header on a 2025-11-25 session, and
// the order of a call's last progress notification and its response.
//
//   node wire.mjs stdio CORRAL PLUGINS_DIR
//   node wire.mjs http URL
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { abort, assert, check, finish, setSuite, text } from './check.mjs';
import { post as postTo, Stdio as RawStdio } from './raw.mjs';

const [mode, ...rest] = process.argv.slice(2);
setSuite(`wire/${mode}`);

const initialize = (id, capabilities = {}) => ({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'corral-interop-wire', version: '1.0.0' } },
});
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };

/** corral over stdio with exactly `env`, serving the suite's plugins. */
class Stdio extends RawStdio {
    constructor(args, env) {
        super(rest[0], rest[1], args, env);
    }
}

async function stdioChecks() {
    await check('request ids: 0 and strings are echoed as sent; unknown capability keys are accepted', async () => {
        const s = new Stdio(['--db', ':memory:'], { PATH: process.env.PATH });
        try {
            s.send(initialize('init-1', { extensions: { 'io.modelcontextprotocol/tasks': {} }, experimental: { x: {} }, futureKey: { y: 1 } }));
            const init = await s.response('init-1');
            assert.equal(init.result?.protocolVersion, '2025-11-25', JSON.stringify(init));
            s.send(initialized);
            s.send({ jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'echo', arguments: { text: 'zero' } } });
            s.send({ jsonrpc: '2.0', id: '0', method: 'tools/call', params: { name: 'echo', arguments: { text: 'string zero' } } });
            assert.equal(text((await s.response(0)).result), 'zero');
            assert.equal(text((await s.response('0')).result), 'string zero');
        } finally {
            await s.close();
        }
    });

    await check("the last progress notification comes before the call's response", async () => {
        const s = new Stdio(['--db', ':memory:'], { PATH: process.env.PATH });
        try {
            s.send(initialize(1));
            await s.response(1);
            s.send(initialized);
            s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'tick', arguments: { count: 3, interval_ms: 30 }, _meta: { progressToken: 'p' } } });
            await s.response(2);
            const order = s.lines.filter((m) => m.id === 2 || m.params?.progressToken === 'p').map((m) => (m.id === 2 ? 'response' : m.params.progress));
            assert.deepEqual(order, [1, 2, 3, 'response']);
        } finally {
            await s.close();
        }
    });

    await check('almost no environment: `task: {}` without ttl, the default database under HOME survives a restart', async () => {
        const home = mkdtempSync(join(tmpdir(), 'corral-wire-home-'));
        try {
            // Less than the SDKs and the Inspector pass (HOME, LOGNAME, PATH, SHELL, TERM, USER): no CORRAL_*, no XDG_*.
            const env = { HOME: home, PATH: process.env.PATH };
            const first = new Stdio([], env);
            first.send(initialize(1));
            await first.response(1);
            first.send(initialized);
            first.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'tick', arguments: { count: 1, interval_ms: 1 }, task: {} } });
            const task = (await first.response(2)).result?.task;
            assert.ok(task?.taskId, JSON.stringify(first.lines));
            assert.equal(task.ttl, 3_600_000, 'the ttl corral picks when none is asked (--task-ttl, 1h)');
            await first.wait((m) => m.method === 'notifications/tasks/status' && m.params.status === 'completed', 'completed status');
            await first.close();
            const db = join(home, '.local/share/corral/tasks.db');
            assert.ok(existsSync(db), `no task database at ${db}; corral said:\n${first.stderr}`);

            const second = new Stdio([], env);
            second.send(initialize(1));
            await second.response(1);
            second.send(initialized);
            second.send({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId: task.taskId } });
            const again = await second.response(2);
            await second.close();
            assert.equal(again.result?.status, 'completed', JSON.stringify(again));
        } finally {
            rmSync(home, { recursive: true, force: true });
        }
    });

    await check('an empty environment with --db: serves as usual', async () => {
        const s = new Stdio(['--db', ':memory:'], {});
        try {
            s.send(initialize(1));
            assert.equal((await s.response(1)).result?.serverInfo?.name, 'corral');
        } finally {
            await s.close();
        }
    });
}

async function httpChecks(url) {
    const post = (body, headers = {}) => postTo(url, body, headers);

    const init = await post(initialize('init-1', { extensions: { 'io.modelcontextprotocol/tasks': {} }, futureKey: {} }));
    if (init.status !== 200 || !init.session) abort(`initialize: HTTP ${init.status} ${init.raw}`);
    const session = { 'mcp-session-id': init.session, 'mcp-protocol-version': '2025-11-25' };
    await post(initialized, session);

    await check('string ids and unknown capability keys', async () => {
        assert.equal(init.json?.id, 'init-1');
        const r = await post({ jsonrpc: '2.0', id: 'call-a', method: 'tools/call', params: { name: 'echo', arguments: { text: 'a' } } }, session);
        assert.equal(r.json?.id, 'call-a', r.raw);
        assert.equal(text(r.json.result), 'a');
    });

    await check('request id 0 and `task: {}` without ttl', async () => {
        const r = await post({ jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'tick', arguments: { count: 1, interval_ms: 1 }, task: {} } }, session);
        assert.equal(r.status, 200, r.raw);
        assert.equal(r.json?.id, 0, r.raw);
        assert.equal(r.json.result?.task?.ttl, 3_600_000, r.raw);
    });

    await check('an older MCP-Protocol-Version header on a 2025-11-25 session is served', async () => {
        for (const version of ['2025-06-18', '2025-03-26']) {
            const r = await post({ jsonrpc: '2.0', id: `v-${version}`, method: 'tools/list' }, { ...session, 'mcp-protocol-version': version });
            assert.equal(r.status, 200, `${version}: ${r.raw}`);
            assert.equal(r.json?.result?.tools?.length, 5, r.raw);
        }
        const none = await post({ jsonrpc: '2.0', id: 'v-none', method: 'ping' }, { 'mcp-session-id': init.session });
        assert.equal(none.status, 200, `no header: ${none.raw}`);
        const bad = await post({ jsonrpc: '2.0', id: 'v-bad', method: 'ping' }, { ...session, 'mcp-protocol-version': '1999-01-01' });
        assert.equal(bad.status, 400, `unknown version: ${bad.raw}`);
    });

    await fetch(url, { method: 'DELETE', headers: session });
}

if (mode === 'stdio') await stdioChecks();
else if (mode === 'http') await httpChecks(rest[0]);
else abort(`usage: wire.mjs stdio CORRAL PLUGINS | http URL (got ${mode})`);
finish();
