// A real authorization server for tests/oauth.rs: oidc-provider (a certified OpenID provider) on
// 127.0.0.1, issuing RFC 9068 JWT access tokens for the resource indicators it is given, and
// opaque ones (checked by RFC 7662 introspection) to the clients whose id starts with `opaque-`.
//
//   node as.mjs RESOURCE [OTHER_RESOURCE...]
//
// Prints one JSON line once it listens: {"issuer": "http://127.0.0.1:PORT"}. Then serves:
//   - the provider: discovery, JWKS, /token (client credentials for svc-a, svc-b, svc-narrow,
//     svc-admin, svc-ops (whose tokens carry groups: ["operators"]), opaque-a, opaque-b; each
//     client's secret is its id + "-secret"),
//     /token/introspection (for the client corral-rs, HTTP Basic), /token/revocation, /auth with
//     PKCE, /reg (dynamic client registration), the built-in login and consent pages;
//   - POST /test/rotate: a new signing key first in the set (the old one kept after it), as
//     oidc-provider's rotation recipe does; answers {"kid": NEW};
//   - POST /test/forge {claims, header?, key}: a token signed as the test asks, for the bad-token
//     cases the provider would never issue: key "current" (the real signing key, e.g. an expired
//     token), "foreign" (a key not in the set), "none" (alg none), "hs-public" (HS256 keyed with
//     the real public key's PEM).
import { createServer } from 'node:http';
import { createHmac, generateKeyPairSync } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';
import { SignJWT, importJWK } from 'jose';

const resources = process.argv.slice(2);
if (resources.length === 0) {
  console.error('usage: node as.mjs RESOURCE [OTHER_RESOURCE...]');
  process.exit(2);
}

let generation = 0;
function newKey() {
  generation += 1;
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = `key-${generation}`;
  return { kid, jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }, publicPem: publicKey.export({ type: 'spki', format: 'pem' }) };
}

let keys = [newKey()];
let provider;
let handler;
let issuer;

const client = (id, scope, method = 'client_secret_post') => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: method,
  scope,
});

function makeProvider() {
  const p = new Provider(issuer, {
    clients: [
      client('svc-a', 'mcp tools'),
      client('svc-b', 'mcp tools'),
      client('svc-narrow', 'tools'),
      client('svc-admin', 'mcp corral:admin'),
      client('svc-ops', 'mcp corral:admin'),
      client('opaque-a', 'mcp tools'),
      client('opaque-b', 'mcp tools'),
      // The resource server itself, asking about opaque tokens.
      client('corral-rs', 'mcp', 'client_secret_basic'),
    ],
    jwks: { keys: keys.map((k) => k.jwk) },
    // svc-ops's tokens say it is in the group `operators`.
    extraTokenClaims: (ctx, token) => (token.clientId === 'svc-ops' ? { groups: ['operators'] } : undefined),
    cookies: { keys: ['corral-oauth-test'] },
    scopes: ['openid', 'offline_access', 'mcp', 'tools', 'corral:admin'],
    features: {
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      devInteractions: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resources[0],
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator, client) => {
          if (!resources.includes(indicator)) throw new errors.InvalidTarget();
          const accessTokenFormat = client?.clientId.startsWith('opaque-') ? 'opaque' : 'jwt';
          return { scope: 'mcp tools corral:admin', audience: indicator, accessTokenTTL: 3600, accessTokenFormat, jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
    pkce: { required: () => true },
  });
  return p;
}

async function body(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
}

const b64 = (value) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

async function forge({ claims, header = {}, key }) {
  const current = keys[0];
  switch (key) {
    case 'current':
    case 'foreign': {
      const signer = key === 'current' ? current : newKey();
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: key === 'current' ? current.kid : 'not-in-the-set', ...header })
        .sign(await importJWK(signer.jwk, 'RS256'));
    }
    case 'none':
      return `${b64({ alg: 'none', typ: 'at+jwt', ...header })}.${b64(claims)}.`;
    case 'hs-public': {
      const input = `${b64({ alg: 'HS256', typ: 'at+jwt', kid: current.kid, ...header })}.${b64(claims)}`;
      return `${input}.${createHmac('sha256', current.publicPem).update(input).digest('base64url')}`;
    }
    default:
      throw new Error(`unknown key ${key}`);
  }
}

const server = createServer(async (req, res) => {
  try {
    if (req.method === 'POST' && req.url === '/test/rotate') {
      keys = [newKey(), ...keys];
      provider = makeProvider();
      handler = provider.callback();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kid: keys[0].kid }));
      return;
    }
    if (req.method === 'POST' && req.url === '/test/forge') {
      const token = await forge(JSON.parse(await body(req)));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token }));
      return;
    }
    handler(req, res);
  } catch (e) {
    res.writeHead(500).end(String(e?.stack ?? e));
  }
});

server.listen(0, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  provider = makeProvider();
  handler = provider.callback();
  console.log(JSON.stringify({ issuer }));
});
