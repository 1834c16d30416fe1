// A certified OpenID Provider (oidc-provider) on a loopback port: the real peer of the platform's
// OIDC tests. It listens on 127.0.0.1 at a free port, prints one JSON line {"issuer": "..."} on
// stdout when it is ready, and exits when its stdin closes, so that it never outlives the test
// process that started it.
//
// Settings, from the environment:
//   OIDC_CLIENT_ID       the client of the platform (default "platform")
//   OIDC_CLIENT_SECRET   its secret; a public client (PKCE only) when empty
//   OIDC_REDIRECT_URIS   comma-separated redirect URIs of the client (required)
//   OIDC_RESOURCES       comma-separated resource indicators for which JWT access tokens are
//                        issued, each token's audience being its resource (required)
//
// Sign-in uses the development interactions: any login name with any password signs in as the
// account whose subject is that name, then a consent form grants what the client asked for.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

import Provider, { errors } from 'oidc-provider';

function list(name) {
  const value = process.env[name] ?? '';
  const items = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) {
    console.error(`provider.js: ${name} is required`);
    process.exit(2);
  }
  return items;
}

const clientId = process.env.OIDC_CLIENT_ID || 'platform';
const clientSecret = process.env.OIDC_CLIENT_SECRET || '';
const redirectUris = list('OIDC_REDIRECT_URIS');
const resources = new Set(list('OIDC_RESOURCES'));

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-signing-key', use: 'sig', alg: 'RS256' };

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: clientId,
      ...(clientSecret
        ? { client_secret: clientSecret, token_endpoint_auth_method: 'client_secret_basic' }
        : { token_endpoint_auth_method: 'none' }),
      redirect_uris: redirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
    }],
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    pkce: { required: () => true },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // An authorization request may name a resource; the token request then gets it.
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resourceIndicator) => {
          if (!resources.has(resourceIndicator)) {
            throw new errors.InvalidTarget();
          }
          return { scope: 'api', audience: resourceIndicator, accessTokenFormat: 'jwt', accessTokenTTL: 300 };
        },
      },
    },
  });
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
