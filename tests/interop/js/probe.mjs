// Clients that probe with `server/discover` and then open with `initialize` anyway, as real ones
// do (GitHub Copilot CLI after a probe timeout of about 0.6 s, copilot-cli#4525; Claude Code 2.1.280
// even after a probe that succeeded, claude-code#96183): corral must not lock the connection to
// 2026-07-28 on a discover, so the 2025-11-25 session that follows works as any other.
//
//   node probe.mjs stdio CORRAL PLUGINS_DIR
//   node probe.mjs http URL
//
// The timed-out probe over stdio is the TypeScript client 2.4 itself: in `auto` mode on a
// stdio-shaped transport of its own (a subclass of StdioClientTransport) it probes on the
// connection and, when the probe gets no answer within `probe.timeoutMs`, falls back to
// `initialize` on the same pipe. A 1 ms timeout is shorter than any answer a freshly spawned
// process can give, so the late DiscoverResult always arrives after the fallback began.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { abort, assert, check, finish, setSuite, text } from './check.mjs';
import { post, Stdio } from './raw.mjs';

const [mode, ...rest] = process.argv.slice(2);
setSuite(`probe/${mode}`);

const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const discover = (id) => ({ jsonrpc: '2.0', id, method: 'server/discover', params: { _meta: envelope } });
const initialize = (id) => ({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'corral-interop-probe', version: '1.0.0' } },
});
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const echo = (id, words) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: words } } });

/** The SDK's stdio transport under another name: the client then probes on this very pipe. */
class InPlaceStdio extends StdioClientTransport {}

async function stdioChecks() {
    const [corral, plugins] = rest;
    const args = ['--db', ':memory:'];

    await check('TS client 2.4 auto, probe timed out (1 ms): initialize on the same pipe, a working 2025-11-25 session', async () => {
        const transport = new InPlaceStdio({ command: corral, args: ['serve', '--plugins', plugins, ...args], stderr: 'pipe' });
        let stderr = '';
        transport.stderr?.on('data', (c) => (stderr += c));
        const client = new Client({ name: 'corral-interop-probe', version: '1.0.0' }, { versionNegotiation: { mode: 'auto', probe: { timeoutMs: 1 } } });
        try {
            await client.connect(transport);
            assert.equal(client.getProtocolEra(), 'legacy', 'the probe was meant to time out');
            assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
            assert.equal(client.getServerVersion()?.name, 'corral');
            const result = await client.callTool({ name: 'echo', arguments: { text: 'after the probe' } });
            assert.equal(text(result), 'after the probe', stderr);
            assert.deepEqual(await client.ping(), {});
        } finally {
            await client.close();
        }
    });

    await check('discover and initialize back to back (no wait): both answered, the session is 2025-11-25', async () => {
        const s = new Stdio(corral, plugins, args, { PATH: process.env.PATH });
        try {
            s.send(discover('probe'));
            s.send(initialize('init'));
            const [probe, init] = [await s.response('probe'), await s.response('init')];
            assert.ok(probe.result?.supportedVersions?.includes('2026-07-28'), JSON.stringify(probe));
            assert.equal(init.result?.protocolVersion, '2025-11-25', JSON.stringify(init));
            s.send(initialized);
            s.send(echo(1, 'legacy'));
            const call = await s.response(1);
            assert.equal(text(call.result), 'legacy');
            assert.equal(call.result.resultType, undefined, 'a 2025-11-25 result has no resultType');
        } finally {
            await s.close();
        }
    });

    await check('initialize after a discover that succeeded: the session is 2025-11-25', async () => {
        const s = new Stdio(corral, plugins, args, { PATH: process.env.PATH });
        try {
            s.send(discover('probe'));
            assert.ok((await s.response('probe')).result?.supportedVersions, 'no DiscoverResult');
            s.send(initialize('init'));
            const init = await s.response('init');
            assert.equal(init.result?.protocolVersion, '2025-11-25', JSON.stringify(init));
            s.send(initialized);
            s.send(echo(1, 'still legacy'));
            assert.equal(text((await s.response(1)).result), 'still legacy');
        } finally {
            await s.close();
        }
    });
}

async function httpChecks(url) {
    const modern = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' };

    await check('a discover POST given up after 1 ms, then initialize: a working 2025-11-25 session', async () => {
        // The client stops waiting (a closed request is cancellation on this transport).
        await post(url, discover('probe'), modern, AbortSignal.timeout(1)).then(
            () => {},
            (e) => assert.match(String(e?.name), /TimeoutError|AbortError/),
        );
        const init = await post(url, initialize('init'));
        assert.equal(init.status, 200, init.raw);
        assert.equal(init.json?.result?.protocolVersion, '2025-11-25', init.raw);
        const session = { 'mcp-session-id': init.session, 'mcp-protocol-version': '2025-11-25' };
        await post(url, initialized, session);
        const call = await post(url, echo(1, 'legacy'), session);
        assert.equal(text(call.json?.result), 'legacy', call.raw);
        await fetch(url, { method: 'DELETE', headers: session });
    });

    await check('initialize after a discover that succeeded: a working 2025-11-25 session', async () => {
        const probe = await post(url, discover('probe'), modern);
        assert.equal(probe.status, 200, probe.raw);
        assert.ok(probe.json?.result?.supportedVersions?.includes('2025-11-25'), probe.raw);
        const init = await post(url, initialize('init'));
        assert.equal(init.json?.result?.protocolVersion, '2025-11-25', init.raw);
        assert.ok(init.session, 'no Mcp-Session-Id');
        const session = { 'mcp-session-id': init.session, 'mcp-protocol-version': '2025-11-25' };
        await post(url, initialized, session);
        const call = await post(url, echo(1, 'still legacy'), session);
        assert.equal(text(call.json?.result), 'still legacy', call.raw);
        await fetch(url, { method: 'DELETE', headers: session });
    });
}

if (mode === 'stdio') await stdioChecks();
else if (mode === 'http') await httpChecks(rest[0]);
else abort(`usage: probe.mjs stdio CORRAL PLUGINS | http URL (got ${mode})`);
finish();
