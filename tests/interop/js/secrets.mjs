// The TypeScript SDK's Client (npm @modelcontextprotocol/sdk 1.32.x) declaring URL-mode
// elicitation, against a `corral serve --http --public-url …` whose probe plugin needs a caller
// secret this caller has not set: callTool throws the SDK's UrlElicitationRequiredError (-32042)
// carrying one URL elicitation on corral's public URL; a caller who has set it gets a result.
//
//   node secrets.mjs URL TOKEN_WITHOUT TOKEN_WITH PUBLIC_URL
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import { abort, assert, check, finish, setSuite, text } from './check.mjs';

const [url, without, withSecret, publicUrl] = process.argv.slice(2);
setSuite('ts-sdk/secrets');

/** A client holding `token` that can send its person to a URL. */
async function connect(token) {
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
    const client = new Client({ name: 'corral-interop-secrets', version: '1.0.0' }, { capabilities: { elicitation: { form: {}, url: {} } } });
    try {
        await client.connect(transport);
    } catch (e) {
        abort(`connect failed: ${e?.message ?? e}`);
    }
    return client;
}

const asked = await connect(without);
await check('a caller secret not set yet throws UrlElicitationRequiredError with one URL elicitation', async () => {
    let error;
    try {
        const result = await asked.callTool({ name: 'probe', arguments: { env: 'TRACKER_TOKEN' } });
        assert.fail(`expected -32042, got a result: ${JSON.stringify(result)}`);
    } catch (e) {
        error = e;
    }
    assert.ok(error instanceof UrlElicitationRequiredError, `expected UrlElicitationRequiredError, got ${error?.constructor?.name}: ${error?.message}`);
    assert.equal(error.code, ErrorCode.UrlElicitationRequired);
    assert.equal(error.elicitations.length, 1);
    const [elicitation] = error.elicitations;
    assert.equal(elicitation.mode, 'url');
    assert.ok(elicitation.url.startsWith(`${publicUrl}/secrets/connect/`), elicitation.url);
    assert.ok(elicitation.url.endsWith(elicitation.elicitationId), `${elicitation.url} names ${elicitation.elicitationId}`);
    assert.match(elicitation.message, /TRACKER_TOKEN/);
});
await asked.close();

const served = await connect(withSecret);
await check('a caller who has set it gets the result', async () => {
    const result = await served.callTool({ name: 'probe', arguments: { env: 'TRACKER_TOKEN' } });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.match(text(result), /\[secret TRACKER_TOKEN\]/);
});
await served.close();
finish();
