// A software passkey, for the TypeScript client tests: what a platform
// authenticator answers to `navigator.credentials.create()` and `.get()`
// (ES256, user present and verified, `none` attestation), built from the
// WebAuthn spec with node:crypto, and what Airlock's page script
// (passkey.js) then posts. tests/approvals/softkey.py is the same thing in
// Python, tests/integration/softkey.rs in Rust; the browser tests use
// Chromium's virtual authenticator.

import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';

const b64 = (bytes) => Buffer.from(bytes).toString('base64url');
const unb64 = (text) => Buffer.from(text, 'base64url');
const sha256 = (data) => createHash('sha256').update(data).digest();

function head(major, n) {
  if (n < 24) return Buffer.from([(major << 5) | n]);
  if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
  const size = Buffer.alloc(2);
  size.writeUInt16BE(n);
  return Buffer.concat([Buffer.from([(major << 5) | 25]), size]);
}

/** CBOR of integers, bytes, text and maps of them (a Map keeps its keys' types). */
function cbor(value) {
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value]);
  if (typeof value === 'string') {
    const data = Buffer.from(value);
    return Buffer.concat([head(3, data.length), data]);
  }
  if (value instanceof Map) {
    return Buffer.concat([head(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)])]);
  }
  throw new TypeError(`cannot encode ${typeof value}`);
}

function clientData(type, options, origin) {
  return Buffer.from(JSON.stringify({ type, challenge: options.challenge, origin, crossOrigin: false }));
}

function counter(n) {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(n);
  return bytes;
}

/** One passkey: its credential id, key pair, relying party and user. */
export class SoftKey {
  constructor(rpId, user) {
    ({ privateKey: this.privateKey, publicKey: this.publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' }));
    this.id = randomBytes(16);
    this.rpId = rpId;
    this.user = user;
    this.counter = 0;
  }

  /** Answer `create({publicKey: options})` at `origin`: the passkey and the credential JSON the page posts. */
  static create(options, origin) {
    const key = new SoftKey(options.rp.id, unb64(options.user.id));
    const jwk = key.publicKey.export({ format: 'jwk' });
    const cose = cbor(new Map([[1, 2], [3, -7], [-1, 1], [-2, unb64(jwk.x)], [-3, unb64(jwk.y)]]));
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(key.id.length);
    const authData = Buffer.concat([
      sha256(key.rpId),
      Buffer.from([0x01 | 0x04 | 0x40]),
      counter(0),
      Buffer.alloc(16),
      idLength,
      key.id,
      cose,
    ]);
    const attestation = cbor(new Map([['fmt', 'none'], ['attStmt', new Map()], ['authData', authData]]));
    const credential = {
      id: b64(key.id),
      rawId: b64(key.id),
      type: 'public-key',
      response: { attestationObject: b64(attestation), clientDataJSON: b64(clientData('webauthn.create', options, origin)) },
      extensions: {},
    };
    return { key, credential: JSON.stringify(credential) };
  }

  /** Answer `get({publicKey: options})` at `origin` with this passkey. */
  get(options, origin) {
    this.counter += 1;
    const authData = Buffer.concat([sha256(this.rpId), Buffer.from([0x01 | 0x04]), counter(this.counter)]);
    const client = clientData('webauthn.get', options, origin);
    const signature = sign('sha256', Buffer.concat([authData, sha256(client)]), this.privateKey);
    return JSON.stringify({
      id: b64(this.id),
      rawId: b64(this.id),
      type: 'public-key',
      response: {
        authenticatorData: b64(authData),
        clientDataJSON: b64(client),
        signature: b64(signature),
        userHandle: b64(this.user),
      },
      extensions: {},
    });
  }
}

// What the page's script does, for a client that reads the page's HTML.

/** `text` with the entities the page escapes turned back. */
export function unescapeHtml(text) {
  return text
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&#x27;', "'")
    .replaceAll('&amp;', '&');
}

function attribute(tag, name) {
  const match = new RegExp(`\\b${name}="([^"]*)"`).exec(tag);
  return match ? unescapeHtml(match[1]) : undefined;
}

/** The hidden fields of the page's form, as the page has them. */
export function formFields(page) {
  return Object.fromEntries([...page.matchAll(/<input [^>]*>/g)].map(([tag]) => [attribute(tag, 'name') ?? '', attribute(tag, 'value') ?? '']));
}

function button(page, id) {
  const match = new RegExp(`<button [^>]*id="${id}"[^>]*>`).exec(page);
  if (!match) throw new Error(`no button ${id} in ${page}`);
  return match[0];
}

/** The form the page's script posts when `decision` is pressed and `key` answers. */
export function answerForm(page, decision, key, origin) {
  const tag = button(page, decision);
  const fields = { ...formFields(page), decision, state: attribute(tag, 'data-state') ?? '' };
  const options = attribute(tag, 'data-get');
  if (key && options) fields.credential = key.get(JSON.parse(options), origin);
  return fields;
}

/** The form the enrolment page's script posts: a new passkey (a person's first). */
export function enrolForm(page, origin) {
  const tag = button(page, 'enrol');
  const create = attribute(tag, 'data-create');
  if (!create) throw new Error(`no passkey options in ${tag}`);
  const { key, credential } = SoftKey.create(JSON.parse(create), origin);
  return { key, form: { ...formFields(page), registration: credential, decision: 'enrol' } };
}
