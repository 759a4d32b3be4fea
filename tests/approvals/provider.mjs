// A real OpenID Provider (oidc-provider, certified) on loopback, for the
// approval page's sign-in tests: authorization code with PKCE, RS256 ID
// tokens signed with the keys in the JWKS file the test wrote (so that the
// test can also sign the MCP access tokens Airlock's [http.jwt] checks with
// the same issuer and keys), and its own sign-in form (the development
// interactions: any password, one of the accounts below as login).
//
// Usage: node provider.mjs JWKS_FILE CLIENT_ID REDIRECT_URI...
// Prints `issuer http://127.0.0.1:PORT` on stdout once listening.
import Provider from 'oidc-provider';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';

const [jwksFile, clientId, ...redirectUris] = process.argv.slice(2);
if (!jwksFile || !clientId || redirectUris.length === 0) {
  console.error('usage: node provider.mjs JWKS_FILE CLIENT_ID REDIRECT_URI...');
  process.exit(2);
}
// The bank story's people: two customers, a supervisor, an attacker.
const accounts = {
  alice: { groups: [] },
  bob: { groups: [] },
  carol: { groups: ['supervisors'] },
  mallory: { groups: [] },
};
const configuration = {
  jwks: JSON.parse(readFileSync(jwksFile, 'utf8')),
  clients: [{
    client_id: clientId,
    token_endpoint_auth_method: 'none',
    redirect_uris: redirectUris,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    id_token_signed_response_alg: 'RS256',
  }],
  pkce: { required: () => true },
  claims: { openid: ['sub'], groups: ['groups'] },
  findAccount: async (_ctx, id) =>
    id in accounts ? { accountId: id, claims: async () => ({ sub: id, groups: accounts[id].groups }) } : undefined,
  features: { devInteractions: { enabled: true } },
  // Every sign-in asks again: a test signs in as another person in a new
  // browser profile, never by a session left over.
  ttl: { Session: 60 },
};
const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, configuration);
  server.on('request', provider.callback());
  console.log(`issuer ${issuer}`);
});
