// A real OAuth MCP client for tests/oauth.rs: the TypeScript SDK's `authProvider` against corral.
//
//   node client.mjs MCP_URL LOGIN TOOL ARGUMENTS_JSON
//
// The SDK does the whole flow with no token made by hand: corral's 401 points it at the
// protected resource metadata, that at the authorization server; it registers a client
// (dynamic client registration), sends the user to /auth with PKCE and the resource indicator,
// and exchanges the code. The "user" here is a script: `redirectToAuthorization` follows the
// authorization server's own login and consent pages (devInteractions) with a cookie jar, logging
// in as LOGIN, and stops at the redirect to this client's callback. The client then calls TOOL
// and prints one JSON line: {"subject_hint", "result", "registered_client"}.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [url, login, tool, args = '{}'] = process.argv.slice(2);
const redirectUrl = 'http://127.0.0.1:1/callback';

/** Cookies by name, sent back whatever their path (one host, one test). */
const jar = new Map();
function keepCookies(response) {
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const at = pair.indexOf('=');
    jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
  }
}
const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');

/** GET or POST `target` without following redirects; returns the response. */
async function visit(target, form) {
  const init = { redirect: 'manual', headers: { cookie: cookieHeader() } };
  if (form) {
    init.method = 'POST';
    init.headers['content-type'] = 'application/x-www-form-urlencoded';
    init.body = new URLSearchParams(form).toString();
  }
  const response = await fetch(target, init);
  keepCookies(response);
  return response;
}

/** Follows the authorization server from the authorization URL to the callback: the code. */
async function signIn(authorizationUrl) {
  let target = authorizationUrl.toString();
  let form;
  for (let hop = 0; hop < 20; hop += 1) {
    const response = await visit(target, form);
    form = undefined;
    if (response.status >= 300 && response.status < 400) {
      target = new URL(response.headers.get('location'), target).toString();
      if (target.startsWith(redirectUrl)) {
        const params = new URL(target).searchParams;
        if (params.get('error')) throw new Error(`authorization failed: ${params.get('error')}: ${params.get('error_description')}`);
        return params.get('code');
      }
      continue;
    }
    const page = await response.text();
    if (response.status !== 200) throw new Error(`${target} answered ${response.status}: ${page.slice(0, 500)}`);
    // devInteractions: a login form, then a consent form, both POSTed back to the interaction.
    const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
    if (prompt === 'login') form = { prompt: 'login', login, password: 'any' };
    else if (prompt === 'consent') form = { prompt: 'consent' };
    else throw new Error(`unexpected page at ${target}: ${page.slice(0, 500)}`);
    target = new URL(/action="([^"]+)"/.exec(page)[1], target).toString();
  }
  throw new Error('too many redirects');
}

let clientInformation;
let tokens;
let verifier;
let code;
const authProvider = {
  get redirectUrl() {
    return redirectUrl;
  },
  get clientMetadata() {
    return { client_name: 'corral oauth test', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  clientInformation: () => clientInformation,
  saveClientInformation: (info) => {
    clientInformation = info;
  },
  tokens: () => tokens,
  saveTokens: (t) => {
    tokens = t;
  },
  redirectToAuthorization: async (authorizationUrl) => {
    code = await signIn(authorizationUrl);
  },
  saveCodeVerifier: (v) => {
    verifier = v;
  },
  codeVerifier: () => verifier,
};

const client = new Client({ name: 'corral-oauth-test', version: '1.0.0' });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider }));
  throw new Error('connected without signing in: corral did not ask for a token');
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
}
if (!code) throw new Error('the SDK never sent the user to the authorization server');
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider });
await transport.finishAuth(code);
// A fresh transport, as the SDK's examples do after finishAuth.
const fresh = new StreamableHTTPClientTransport(new URL(url), { authProvider });
const signedIn = new Client({ name: 'corral-oauth-test', version: '1.0.0' });
await signedIn.connect(fresh);
const result = await signedIn.callTool({ name: tool, arguments: JSON.parse(args) });
const payload = JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url').toString());
console.log(JSON.stringify({ result, registered_client: clientInformation?.client_id ?? null, token_subject: payload.sub, token_aud: payload.aud }));
await signedIn.close();
