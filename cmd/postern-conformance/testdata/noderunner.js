#!/usr/bin/env node
// noderunner.js — an independent Postern 0.1 runner, written from SPEC.md alone
// (sections 1-8), in Node.js with nothing but the standard library.
//
// It exists to be pointed at by postern-conformance: it deliberately makes
// implementation choices a Go server typically would not (chunked JSON,
// keep-alive, `application/json` without a charset, 404 for a wrong method,
// comments in the stream, steps without model_id, an `update` block, ...),
// and it can plant exactly one breach of a MUST through FAULT.
//
// Prints POSTERN_PORT=<port> as its first stdout line (SPEC §2) and listens on
// 127.0.0.1:0.
//
// Configuration (environment variables):
//   LEVEL        1 | 2 | 3                                    (default 3)
//   ENTITLEMENT  not_required | active | revoked | unknown-never | unknown-grace
//                                                             (default not_required)
//   AUTH_TOKEN   when set, every request under /postern/v0/ except a preflight
//                must carry `Authorization: Bearer <token>` (§7)
//   AUTH_SCOPE   all (default) | exec — with `exec`, only run and stream need it
//   ORIGINS      comma-separated origins to admit (§2.3); `null` is never admitted
//   IDEMPOTENT   1 → declare status.idempotent_retry and honour Idempotency-Key
//                (replay, 409 on changed inputs, one keyspace across run/stream)
//   MISSING_CRED 1 → the declared NODE_ECHO_SEARCH_KEY is unset: status degraded,
//                credentials.missing, 424 with error.detail.missing
//   CRED_NAME / CRED_PURPOSE / CRED_SIGNUP_URL override the first declared credential's members
//   NO_CREDS     1 → describe declares no credentials at all
//   CRED_BLOCK   0 → status publishes no `credentials` block (§4.4 makes it OPTIONAL)
//   BYTES        1 → output type bytes (image/png by default), no deltas
//   MEDIA_TYPE   media type for BYTES (default image/png)
//   WRONG_METHOD 404 (default) | 400 — how a wrong method on a defined path is refused
//   METHODS_STYLE  canonical (default) | reversed | compact — spelling of
//                Access-Control-Allow-Methods (`OPTIONS, POST`, `POST,OPTIONS`)
//   SSE_EOL      lf (default) | crlf | cr — line terminator in the stream
//   SSE_NOSPACE  1 → `data:{...}` with no space after the colon
//   MULTILINE_DATA 1 → each payload pretty-printed over several data: lines
//   SSE_INTERLEAVE_COMMENT 1 → a comment line inside each event, between event: and data:
//   SSE_DATA_FIRST 1 → each event writes data: before event: (field order is free in SSE)
//   SSE_BOM      1 → the stream begins with a U+FEFF byte order mark (stripped by SSE parsers)
//   EXTRA_EVENT  1 → also emit an unrecognised event (`event: progress`)
//   PATTERN_UNANCHORED 1 → validation.pattern is `[0-9]` (search semantics)
//   STRICT_KEYS  1 → refuse an input key describe does not declare
//   DATE_STYLE   plain (default) | frac | offset | lower — RFC 3339 spellings
//   DETAIL       null (default) | omit | string — how an error with no detail is shaped
//   CT_STYLE     bare (default: application/json) | charset | charset-upper
//   SSE_CT       bare (default: text/event-stream) | charset
//   VARY_STYLE   origin (default) | multi (`Accept-Encoding, Origin`) | lower (`origin`)
//   ACAH_STYLE   canonical (default) | lower | extra (also names X-Request-Id) |
//                echo (reflect Access-Control-Request-Headers, filtered) | echo-raw
//   HEADER_CASE  canonical (default) | lower — spelling of response header names
//   CAPS_STREAMING 1 → describe still carries the withdrawn capabilities.streaming
//   RICH_REQUIRED 1 → every input is required (pattern, select, number included)
//   IDEM_DECLARE_FALSE 1 → status says idempotent_retry: false explicitly
//   ALL_OPTIONAL 1 → no input is required (prompt defaults to "hello")
//   NO_INPUTS    1 → the agent declares no inputs at all
//   LENIENT_INPUTS 1 → an object body without `inputs` is read as {"inputs": {}}
//   EXAMPLES_FULL 1 → describe.examples carries a value for every input
//   UPDATE_STYLE auto (default) | omit | distributor (free agent, versions from a
//                distributor: entitlement not_required beside update current/update_available)
//   READS_BODY_BEFORE comma list of level,auth,entitlement: drain the body
//                before answering that refusal (never the media-type one)
//   PREFLIGHT_STATUS 204 (default) | 200 (with a short text body)
//   SLOW_MS      extra milliseconds each execution takes
//   STEP_NO_LATENCY 1 → finished steps carry no latency_ms
//   LOG          a file to append one line per request to (method, path, labels, answer)
//   POSTERN_START_LOG a file to append one line to per agent start (run_id)
//   FAULT        one planted breach; see FAULTS below.
//
// Every configuration with FAULT unset is meant to be conformant. The ones a
// reviewer may dispute are LENIENT_INPUTS (no MUST says an absent `inputs` with
// no required input must be refused) and READS_BODY_BEFORE (only the
// media-type refusal is required "before reading the body at all").
'use strict';

const http = require('http');
const crypto = require('crypto');

const env = process.env;
const LEVEL = Number(env.LEVEL || '3');
const ENTITLEMENT = env.ENTITLEMENT || 'not_required';
const AUTH_TOKEN = env.AUTH_TOKEN || '';
const AUTH_SCOPE = env.AUTH_SCOPE || 'all';
const IDEMPOTENT = env.IDEMPOTENT === '1' && LEVEL >= 2;
const MISSING_CRED = env.MISSING_CRED === '1';
const NO_CREDS = env.NO_CREDS === '1';
const CRED_BLOCK = env.CRED_BLOCK !== '0';
const BYTES = env.BYTES === '1';
const MEDIA_TYPE = env.MEDIA_TYPE || 'image/png';
const WRONG_METHOD = env.WRONG_METHOD || '404';
const METHODS_STYLE = env.METHODS_STYLE || 'canonical';
const EOL = { lf: '\n', crlf: '\r\n', cr: '\r' }[env.SSE_EOL || 'lf'] || '\n';
const SSE_SEP = env.SSE_NOSPACE === '1' ? ':' : ': ';
const MULTILINE_DATA = env.MULTILINE_DATA === '1';
const EXTRA_EVENT = env.EXTRA_EVENT === '1';
const SSE_INTERLEAVE_COMMENT = env.SSE_INTERLEAVE_COMMENT === '1';
const SSE_DATA_FIRST = env.SSE_DATA_FIRST === '1';
const SSE_BOM = env.SSE_BOM === '1';
const PATTERN_UNANCHORED = env.PATTERN_UNANCHORED === '1';
const STRICT_KEYS = env.STRICT_KEYS === '1';
const DETAIL_STYLE = env.DETAIL || 'null';  // null | omit | string
const FAULT = env.FAULT || '';
const CT_STYLE = env.CT_STYLE || 'bare';
const SSE_CT = env.SSE_CT || 'bare';
const VARY_STYLE = env.VARY_STYLE || 'origin';
const ACAH_STYLE = env.ACAH_STYLE || 'canonical';
const HEADER_CASE = env.HEADER_CASE || 'canonical';
const CAPS_STREAMING = env.CAPS_STREAMING === '1';
const RICH_REQUIRED = env.RICH_REQUIRED === '1';
const IDEM_DECLARE_FALSE = env.IDEM_DECLARE_FALSE === '1';
const ALL_OPTIONAL = env.ALL_OPTIONAL === '1';
const NO_INPUTS = env.NO_INPUTS === '1';
const LENIENT_INPUTS = env.LENIENT_INPUTS === '1';
const EXAMPLES_FULL = env.EXAMPLES_FULL === '1';
const UPDATE_STYLE = env.UPDATE_STYLE || 'auto';
// Refusals that this runner decides only after draining the request body
// (legitimate for every refusal except the media-type one, which §2.3 puts
// "before reading the body at all"): any of level, auth, entitlement.
const READS_BODY_BEFORE = new Set((env.READS_BODY_BEFORE || '').split(',').filter(Boolean));
const SLOW_MS = Number(env.SLOW_MS || '0');
const PREFLIGHT_STATUS = Number(env.PREFLIGHT_STATUS || '204');
const STEP_NO_LATENCY = env.STEP_NO_LATENCY === '1';

// FAULTS: each breaks one MUST (or MUST NOT) of SPEC.md, and nothing else.
const FAULTS = {
  'acao-star': '§2.3 MUST NOT ship Access-Control-Allow-Origin: * as a default',
  'reflect-origin': '§2.3 MUST NOT allow an origin it was not configured to allow (echoes any Origin)',
  'null-origin': '§2.3 Origin: null MUST NOT be treated as a nameable origin (admits null)',
  'text-plain-json': '§2.3 MUST reject run/stream whose media type is not application/json (parses text/plain)',
  'bare-405': '§2.1 every non-2xx under the prefix carries the envelope (wrong method: bare 405 text)',
  'above-level-200': '§3 a verb above the level MUST answer 501 (answers 200 instead)',
  'revoked-400-first': '§4.6 step 2 before 3/4: a revoked runner answers 400 to a malformed request',
  'cred-before-input': '§4.6 step 4 before 5: 424 before 400 for a malformed request',
  'no-level': '§3 MUST report its level in status (level missing)',
  'id-mismatch': '§2.2/§1.5 describe agent.id differs from status agent.id',
  'replay-ignores-inputs': '§4.2 MUST refuse a key with different inputs 409 (replays instead)',
  'done-run-id': '§4.3 done MUST repeat start run_id',
  'retry-field': '§4.3 MUST NOT emit retry:',
  'cred-value': '§4.1.3 describe MUST NOT carry a credential value (value in purpose)',
  'cred-value-member': '§4.1.3 credentials entry carries a value member',
  'delta-mismatch': '§4.3 concatenated deltas MUST equal output.value',
  'latency-on-started': '§4.3 MUST NOT emit latency_ms on a started step',
  'preflight-needs-auth': '§2.3 a preflight MUST NOT require credentials (401 on OPTIONS)',
  'preflight-level': '§2.3 a preflight answer does not depend on level (L1 answers OPTIONS run with 501)',
  'no-idem-header': '§2.3/§4.2 idempotent runner MUST name Idempotency-Key in Allow-Headers',
  'no-auth-header': '§2.3 auth-requiring runner MUST name Authorization in Allow-Headers',
  'acao-preflight-only': '§2.3 ACAO MUST ride the actual response too (omitted there)',
  'no-vary-actual': '§2.3 Vary: Origin MUST ride the actual response (omitted there)',
  'envelope-sibling': '§2.1 MUST NOT emit a sibling of error at the envelope root',
  'validation-422': '§2.1/§4.2 a failed validation is bad_request on 400 (sent on 422)',
  'replay-new-run-id': '§4.2 a replay MUST answer with the result of the first execution (fresh run_id)',
  'key-per-verb': '§4.2 MUST NOT treat the same key on a different verb as a different key',
  'refusal-binds-key': '§4.2 a 400 binds no key (later request with that key gets 409)',
  'bytes-delta': '§4.1.4 a bytes output MUST NOT emit delta',
  'bytes-example': '§4.1.4 MUST NOT emit example for a bytes output',
  'degraded-wrong': '§4.4 degraded iff a declared credential is unset (reports ready while missing)',
  'no-checked-at': '§4.4 checked_at REQUIRED for active/revoked (omitted)',
  'not-required-refuses': '§5.1 MUST NOT refuse on entitlement grounds with no distributor (403)',
  'never-checked-403': '§5.7.3 never-checked answers 503 unavailable (403 instead)',
  'revoked-runs': '§5.7.4 revoked MUST answer 403 not_entitled (runs instead)',
  'no-done': '§4.3 a stream MUST end with exactly one done or error (no terminal event)',
  'start-not-first': '§4.3 start MUST be first (a step precedes it)',
  'missing-required-runs': '§4.2 MUST reject a request omitting a required input (runs anyway)',
  'no-424': '§4.6 step 5 MUST answer 424 (starts the agent and fails 500 instead)',
  'unknown-path-bare': '§2.1 unimplemented path under the prefix answers 404 in the envelope (bare text)',
  'charset-refused': '§2.3 application/json; charset=utf-8 is the same media type (refused 400)',
  'token-in-status': '§7 the inbound credential MUST NOT appear in status',
  'stray-auth-401': '§7 a runner requiring nothing answers as before when sent Authorization (401)',
  'input-type-bool': '§4.1.1 MUST NOT emit an input type outside text/number/select',
  'max-concurrent-0': '§4.4 max_concurrent_runs is at least 1',
  'stream-buffered': '§4.3 MUST write each event as soon as complete (whole stream at the end)',
  'preflight-reset': '§2.3 MUST answer OPTIONS on run/stream (connection destroyed)',
  'level1-degraded': '§4.4 a Level 1 runner reports ready (degraded while a credential is missing)',
  'media-type-upper': '§4.1.4 a runner emits media_type in lower case (IMAGE/PNG)',
  'no-output-block': '§4.1.4 describe output block is REQUIRED (omitted)',
  'write-tools-superset': '§4.1.2 write_tools MUST be a subset of tools',
  'cred-before-entitlement': '§4.6 step 2 before 5: a revoked runner missing a credential answers a valid request 424',
  '501-binds-key': '§4.2 a 501 binds no key (a Level 2 runner binds the key of a refused stream)',
  'bad-checked-at': '§4.4/§5.3 checked_at is an RFC 3339 timestamp (sends "last tuesday")',
  'run-id-reuse': '§4.2 run_id MUST be unique per execution (constant run_id)',
  'bad-agent-id': '§1.5 agent id MUST match the grammar (uppercase)',
  'wrong-code-status': '§2.1 not_entitled travels on 403 (sent on 401)',
  'unknown-code': '§2.1 runner refuses only with defined codes (invents `forbidden`)',
  'status-needs-cred': '§4.4 status MUST NOT require credentials (503 while credential missing)',
  'describe-needs-ent': '§4.1 describe answerable without an entitlement (403 while revoked)',
  'refusal-binds-key-early': '§4.2 a refusal binds no key (key looked up and bound before validation)',
  'reflect-on-post': '§2.3 MUST NOT allow an unconfigured origin (echoed on POST answers only)',
  'origin-prefix': '§2.3 MUST NOT allow an unconfigured origin (prefix match admits app.example.com.evil.test)',
  'origin-case': '§2.3 origin echoed octet-for-octet / not configured (case-insensitive match)',
  'no-ct-accepted': '§2.3 MUST reject run/stream whose media type is not application/json (no Content-Type parsed)',
  'multipart-accepted': '§2.3 MUST reject non-application/json (multipart/form-data parsed)',
  'json-ish-accepted': '§2.3 MUST reject non-application/json (text/json, application/x-json parsed)',
  'methods-post-only': '§2.3 Access-Control-Allow-Methods lacks OPTIONS',
  'done-twice': '§4.3 exactly one done',
  'event-after-done': '§4.3 done MUST be last',
  'start-no-run-id': '§4.3 start carries run_id',
  'step-no-status': '§4.3 a step carries name and status',
  'conflict-rebinds': '§4.2 a 409 binds no key (rebinds the key to the new inputs)',
  'byte-compare': '§4.2 inputs compared by value, not bytes (re-serialised request gets 409)',
  'acah-star': '§2.3 Allow-Headers names Authorization (sends * which never covers Authorization)',
  'unknown-path-400': '§2.1 an unimplemented path answers 404 not_found (400 bad_request)',
  'describe-credential-env-value': '§4.1.3 credential value in env member',
  'preflight-side-effect': '§2.3 a preflight MUST be side-effect free (OPTIONS run starts a run: status running)',
  'stream-error-then-done': '§4.3 exactly one done or error (error then done)',
  'cred-check-skipped-stream': '§4.6 step 5 on stream too (stream runs with credential missing)',
  'text-plain-stream-only': '§2.3 stream parses text/plain (run correct)',
  'idem-not-honoured': '§4.2 declared idempotent_retry but executes again on repeat',
  'no-agent-in-status': '§4.4 agent is REQUIRED in status',
  'no-entitlement-block': '§4.4 entitlement is REQUIRED in status',
  'update-latest-unreachable': '§4.4 update.latest only under current/update_available',
  'unknown-checked-revoked-stale': '§4.4 revoked requires stale_after_seconds (omitted)',
};
if (FAULT && !FAULTS[FAULT]) {
  process.stderr.write(`noderunner: unknown FAULT ${FAULT}; known: ${Object.keys(FAULTS).join(', ')}\n`);
  process.exit(2);
}
const F = (name) => FAULT === name;

// ---------------------------------------------------------------- the agent

const AGENT_ID = 'indie/node-echo';
const AGENT_VERSION = '2.0.1';
const CRED_MAIN = env.CRED_NAME || 'NODE_ECHO_API_KEY';
const CRED_SEARCH = 'NODE_ECHO_SEARCH_KEY';

// A deployment that is "configured": give the declared credentials values
// unless the operator asked for one to be missing. The values never leave
// the process (§4.1.3) — unless FAULT says otherwise.
if (!NO_CREDS) {
  if (!env[CRED_MAIN]) env[CRED_MAIN] = 'sk-live-' + crypto.randomBytes(18).toString('hex');
  if (MISSING_CRED) delete env[CRED_SEARCH];
  else if (!env[CRED_SEARCH]) env[CRED_SEARCH] = 'srch_' + crypto.randomBytes(16).toString('base64url');
}

const INPUTS_ = [
  {
    key: 'prompt', label: 'What to echo', type: F('input-type-bool') ? 'boolean' : 'text',
    required: true, default: null, validation: { max_length: 200, 'x-ui-rows': 3 },
  },
  {
    key: 'tone', label: 'Tone', type: 'select', required: false, default: 'plain',
    validation: { options: ['plain', 'loud', 'whisper'] },
  },
  {
    key: 'repeat', label: 'Repeat count', type: 'number', required: false, default: 1,
    validation: { min: 1, max: 3 },
  },
  {
    key: 'ticket.ref', label: 'Ticket reference', type: 'text', required: false, default: null,
    validation: { pattern: PATTERN_UNANCHORED ? '[0-9]' : '^[A-Z]{2}-[0-9]{3}$', max_length: 16 },
  },
];

const INPUTS = NO_INPUTS ? [] : INPUTS_.map((i) => {
  if (RICH_REQUIRED) return { ...i, required: true };
  if (ALL_OPTIONAL && i.key === 'prompt') return { ...i, required: false, default: 'hello' };
  return i;
});

function declaredCreds() {
  if (NO_CREDS) return [];
  const main = { env: CRED_MAIN, purpose: env.CRED_PURPOSE || 'Calls the echo model.', signup_url: env.CRED_SIGNUP_URL || 'https://echo.example.org/keys' };
  if (F('cred-value')) main.purpose = 'Calls the echo model with ' + env[CRED_MAIN] + '.';
  if (F('cred-value-member')) main.value = env[CRED_MAIN];
  if (F('describe-credential-env-value')) main.env = env[CRED_MAIN];
  return [main, { env: CRED_SEARCH, purpose: 'Looks things up before echoing.' }];
}
function missingCreds() {
  return declaredCreds().map((c) => c.env).filter((name) => !env[name]);
}

// A 1x1 PNG, for BYTES.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64');

function describeDoc() {
  const output = BYTES
    ? { type: 'bytes', media_type: F('media-type-upper') ? MEDIA_TYPE.toUpperCase() : MEDIA_TYPE }
    : { type: 'text', example: 'Echo (plain): hello' };
  if (BYTES && F('bytes-example')) output.example = PNG.toString('base64');
  const doc = {
    postern: '0.1',
    agent: {
      id: F('bad-agent-id') ? 'Indie/Node-Echo' : AGENT_ID,
      name: 'Node Echo', version: AGENT_VERSION,
      summary: 'Echoes its prompt back, in one of three tones.',
    },
    inputs: INPUTS,
    output,
    capabilities: {
      tools: F('write-tools-superset') ? ['shout'] : ['shout', 'whisper', 'post_webhook'],
      write_tools: ['post_webhook'],
      ...(CAPS_STREAMING ? { streaming: true } : {}),
    },
    credentials: declaredCreds(),
    examples: [{ inputs: EXAMPLES_FULL ? { prompt: 'hello', tone: 'loud', repeat: 2, 'ticket.ref': 'AB-123' } : { prompt: 'hello' },
      output: BYTES ? undefined : 'Echo (plain): hello' }],
  };
  if (F('no-output-block')) delete doc.output;
  return doc;
}

// ---------------------------------------------------------------- state

const STARTED = Date.now();
const DATE_STYLE = env.DATE_STYLE || 'plain';
// RFC 3339 admits fractional seconds, a numeric offset, and lower-case t/z.
function iso(ms) {
  const d = new Date(ms);
  if (DATE_STYLE === 'frac') return d.toISOString();
  if (DATE_STYLE === 'lower') return d.toISOString().replace(/\.\d{3}Z$/, 'z').replace('T', 't');
  if (DATE_STYLE === 'offset') {
    const o = new Date(ms + 2 * 3600 * 1000).toISOString().replace(/\.\d{3}Z$/, '');
    return o + '+02:00';
  }
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
const ENDS_PAST = DATE_STYLE === 'plain' ? '2025-06-30T00:00:00Z' : iso(Date.parse('2025-06-30T00:00:00Z'));
const ENDS_FUTURE = DATE_STYLE === 'plain' ? '2031-01-01T00:00:00Z' : iso(Date.parse('2031-01-01T00:00:00Z'));
// The "distributor's" read time: a fixed moment before startup, reported
// unchanged (§4.4: never re-stamped).
const DIST_CHECKED_AT = iso(STARTED - 5000);
const GRACE_CHECKED_AT = iso(STARTED - 2 * 3600 * 1000);

let inFlight = 0;
const MAX_CONCURRENT = 4;
const MAX_RUN_SECONDS = 120;
let runCounter = 0;

function entitlementBlock() {
  switch (ENTITLEMENT) {
    case 'not_required': return { state: 'not_required' };
    case 'active': {
      const b = { state: 'active', checked_at: DIST_CHECKED_AT, stale_after_seconds: 3600, grace_seconds: 86400,
        access_ends_at: ENDS_FUTURE };
      if (F('no-checked-at')) delete b.checked_at;
      if (F('bad-checked-at')) b.checked_at = 'last tuesday';
      return b;
    }
    case 'revoked': {
      const b = { state: 'revoked', checked_at: DIST_CHECKED_AT, stale_after_seconds: 300,
        access_ends_at: ENDS_PAST };
      if (F('no-checked-at')) delete b.checked_at;
      return b;
    }
    case 'unknown-never': return { state: 'unknown' };
    case 'unknown-grace': return { state: 'unknown', checked_at: GRACE_CHECKED_AT, stale_after_seconds: 60, grace_seconds: 86400 };
    default: throw new Error('bad ENTITLEMENT ' + ENTITLEMENT);
  }
}

function updateBlock() {
  if (UPDATE_STYLE === 'omit') return undefined;
  if (UPDATE_STYLE === 'distributor') return { state: 'update_available', current: AGENT_VERSION, latest: '2.1.0' };
  switch (ENTITLEMENT) {
    case 'not_required': return { state: 'not_required', current: AGENT_VERSION };
    case 'active': return { state: 'update_available', current: AGENT_VERSION, latest: '2.1.0' };
    case 'revoked': return { state: 'current', current: AGENT_VERSION, latest: AGENT_VERSION };
    default: return { state: 'unreachable', current: AGENT_VERSION };
  }
}

function statusDoc() {
  const missing = missingCreds();
  let state = 'ready';
  if (LEVEL >= 2 && missing.length && !F('degraded-wrong')) state = 'degraded';
  if (LEVEL === 1 && missing.length && F('level1-degraded')) state = 'degraded';
  if (inFlight > 0) state = 'running';
  const doc = {
    postern: '0.1',
    level: LEVEL,
    state,
    agent: { id: F('id-mismatch') ? 'indie/node-echo-2' : (F('bad-agent-id') ? 'Indie/Node-Echo' : AGENT_ID), version: AGENT_VERSION },
    entitlement: entitlementBlock(),
  };
  if (CRED_BLOCK) doc.credentials = { satisfied: missing.length === 0, missing };
  if (IDEMPOTENT) doc.idempotent_retry = true;
  else if (IDEM_DECLARE_FALSE) doc.idempotent_retry = false;
  if (LEVEL >= 2) {
    doc.limits = { max_run_seconds: MAX_RUN_SECONDS, max_concurrent_runs: F('max-concurrent-0') ? 0 : MAX_CONCURRENT };
    if (IDEMPOTENT) doc.limits.idempotency_retention_seconds = 3600;
    if (BYTES) doc.limits.max_output_bytes = 4096;
  }
  const upd = updateBlock();
  if (upd) doc.update = upd;
  if (F('no-level')) delete doc.level;
  if (F('no-agent-in-status')) delete doc.agent;
  if (F('no-entitlement-block')) delete doc.entitlement;
  if (F('update-latest-unreachable')) doc.update = { state: 'unreachable', current: AGENT_VERSION, latest: '9.9.9' };
  if (F('unknown-checked-revoked-stale') && doc.entitlement.state === 'revoked') delete doc.entitlement.stale_after_seconds;
  if (F('token-in-status') && AUTH_TOKEN) doc.operator = { note: 'inbound token ' + AUTH_TOKEN };
  return doc;
}

// ---------------------------------------------------------------- HTTP helpers

const PREFIX = '/postern/v0/';
const ORIGINS = (env.ORIGINS || '').split(',').map((s) => s.trim()).filter((s) => s && s !== 'null');

function originAllowed(origin) {
  if (origin === undefined) return false;
  if (F('acao-star')) return false; // handled separately
  if (F('reflect-origin')) return true;
  if (origin === 'null') return F('null-origin');
  if (F('origin-prefix')) return ORIGINS.some((o) => origin.startsWith(o));
  if (F('origin-case')) return ORIGINS.some((o) => o.toLowerCase() === origin.toLowerCase());
  return ORIGINS.includes(origin); // octet-for-octet
}

// CORS on an actual (non-preflight) response.
function corsActual(req, headers) {
  const origin = req.headers.origin;
  if (F('acao-star')) { headers['Access-Control-Allow-Origin'] = '*'; return; }
  if (originAllowed(origin) || (F('reflect-on-post') && origin !== undefined && req.method === 'POST')) {
    if (!F('acao-preflight-only')) headers['Access-Control-Allow-Origin'] = origin;
    if (!F('no-vary-actual')) headers['Vary'] = varyValue();
  }
}

function varyValue() {
  return { origin: 'Origin', multi: 'Accept-Encoding, Origin', lower: 'origin' }[VARY_STYLE];
}
function casing(headers) {
  if (HEADER_CASE !== 'lower') return headers;
  const out = {};
  for (const [k, v] of Object.entries(headers)) out[k.toLowerCase()] = v;
  return out;
}
const JSON_CT = { bare: 'application/json', charset: 'application/json; charset=utf-8', 'charset-upper': 'application/json;charset=UTF-8' }[CT_STYLE];

function sendJSON(req, res, status, body, extra) {
  const headers = { 'Content-Type': JSON_CT, 'Cache-Control': 'no-store', ...(extra || {}) };
  corsActual(req, headers);
  res.writeHead(status, casing(headers));
  if (req.method === 'HEAD') { res.end(); return; }
  // Two writes and no Content-Length: Node answers with chunked encoding.
  const text = JSON.stringify(body);
  const cut = Math.floor(text.length / 2);
  res.write(text.slice(0, cut));
  res.end(text.slice(cut));
}

function errorBody(code, message, detail) {
  const err = { code, message };
  if (detail !== undefined) err.detail = detail;
  else if (DETAIL_STYLE === 'null') err.detail = null;
  else if (DETAIL_STYLE === 'string') err.detail = 'see the runner log for ' + code;
  const body = { error: err };
  if (F('envelope-sibling')) body.postern = '0.1';
  return body;
}
const STATUS_OF = {
  bad_request: 400, unauthorized: 401, not_found: 404, not_entitled: 403, idempotency_conflict: 409,
  missing_credential: 424, agent_error: 500, not_implemented: 501, unavailable: 503, run_timeout: 504,
};
function sendError(req, res, code, message, detail) {
  let status = STATUS_OF[code];
  if (F('validation-422') && code === 'bad_request') status = 422;
  if (F('wrong-code-status') && code === 'not_entitled') status = 401;
  if (F('unknown-code') && code === 'not_entitled') code = 'forbidden';
  sendJSON(req, res, status, errorBody(code, message, detail));
}

function methodsFor(verb) {
  const exec = verb === 'run' || verb === 'stream';
  const m = exec ? ['POST', 'OPTIONS'] : ['GET', 'OPTIONS'];
  if (F('methods-post-only')) m.pop();
  if (METHODS_STYLE === 'reversed') return m.reverse().join(', ');
  if (METHODS_STYLE === 'compact') return m.join(',');
  return m.join(', ');
}

function preflight(req, res, verb) {
  const origin = req.headers.origin;
  if (F('preflight-reset') && (verb === 'run' || verb === 'stream')) { req.socket.destroy(); return; }
  if (F('preflight-level') && ((verb === 'run' && LEVEL < 2) || (verb === 'stream' && LEVEL < 3))) {
    sendError(req, res, 'not_implemented', `${verb} sits above Level ${LEVEL}.`);
    return;
  }
  if (F('preflight-needs-auth') && AUTH_TOKEN && !authorized(req)) {
    sendError(req, res, 'unauthorized', 'Authorization required.');
    return;
  }
  if (F('preflight-side-effect') && (verb === 'run' || verb === 'stream')) {
    inFlight += 1; setTimeout(() => { inFlight -= 1; }, 3000); // "warm up" a run
  }
  const headers = {};
  if (F('acao-star')) headers['Access-Control-Allow-Origin'] = '*';
  if (F('acao-star') || originAllowed(origin)) {
    if (!F('acao-star')) headers['Access-Control-Allow-Origin'] = origin;
    headers['Access-Control-Allow-Methods'] = methodsFor(verb);
    const allow = ['Content-Type'];
    if (IDEMPOTENT && !F('no-idem-header')) allow.push('Idempotency-Key');
    if (AUTH_TOKEN && !F('no-auth-header')) allow.push('Authorization');
    if (ACAH_STYLE === 'extra') allow.push('X-Request-Id');
    let acah = allow.join(', ');
    if (ACAH_STYLE === 'lower') acah = acah.toLowerCase();
    if (ACAH_STYLE === 'echo' || ACAH_STYLE === 'echo-raw') {
      // Reflect what the preflight asked for (as the npm `cors` package does),
      // filtered to what this runner admits unless echo-raw.
      const asked = (req.headers['access-control-request-headers'] || '').split(',').map((h) => h.trim()).filter(Boolean);
      const ok = new Set(allow.map((h) => h.toLowerCase()));
      acah = (ACAH_STYLE === 'echo-raw' ? asked : asked.filter((h) => ok.has(h.toLowerCase()))).join(',');
    }
    if (acah === '') { /* nothing asked: send nothing */ } else headers['Access-Control-Allow-Headers'] = F('acah-star') ? '*' : acah;
    headers['Access-Control-Max-Age'] = '600';
    headers['Vary'] = varyValue();
    if (req.headers['access-control-request-private-network'] === 'true') {
      headers['Access-Control-Allow-Private-Network'] = 'true';
    }
  }
  // A refused origin gets a plain 204 with nothing admitted (§2.3 SHOULD).
  if (PREFLIGHT_STATUS === 200) {
    headers['Content-Type'] = 'text/plain';
    res.writeHead(200, casing(headers));
    res.end('ok\n');
    return;
  }
  res.writeHead(PREFLIGHT_STATUS, casing(headers));
  res.end();
}

function authorized(req) {
  if (!AUTH_TOKEN) return true;
  const h = req.headers.authorization || '';
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  if (!m) return false;
  const a = Buffer.from(m[1]);
  const b = Buffer.from(AUTH_TOKEN);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

function mediaTypeOK(req) {
  if (F('text-plain-json')) return true;
  const ct = req.headers['content-type'];
  if (ct === undefined) return F('no-ct-accepted');
  const mt0 = ct.split(';')[0].trim().toLowerCase();
  if (F('multipart-accepted') && mt0 === 'multipart/form-data') return true;
  if (F('json-ish-accepted') && mt0.includes('json')) return true;
  if (F('text-plain-stream-only') && req.url.endsWith('/stream')) return true;
  if (F('charset-refused')) return ct.trim().toLowerCase() === 'application/json';
  return ct.split(';')[0].trim().toLowerCase() === 'application/json';
}

function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > limit) { reject(new Error('too large')); req.destroy(); return; }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

// ---------------------------------------------------------------- validation

function codePoints(s) { return [...s].length; }

// Returns null when valid, else a message naming the offending key.
function validateInputs(inputs) {
  const declared = new Map(INPUTS.map((i) => [i.key, i]));
  if (STRICT_KEYS) {
    for (const k of Object.keys(inputs)) {
      if (!declared.has(k)) return `inputs.${k} is not an input this agent declares`;
    }
  }
  for (const decl of INPUTS) {
    const has = Object.prototype.hasOwnProperty.call(inputs, decl.key);
    const v = has ? inputs[decl.key] : null;
    if (v === null) {
      if (decl.required && !F('missing-required-runs')) return `inputs.${decl.key} is required`;
      continue;
    }
    const val = decl.validation || {};
    if (decl.type === 'number') {
      if (typeof v !== 'number' || !Number.isFinite(v)) return `inputs.${decl.key} must be a number`;
      if (val.min !== undefined && v < val.min) return `inputs.${decl.key} must be at least ${val.min}`;
      if (val.max !== undefined && v > val.max) return `inputs.${decl.key} must be at most ${val.max}`;
    } else {
      if (typeof v !== 'string') return `inputs.${decl.key} must be a string`;
      if (val.max_length !== undefined && codePoints(v) > val.max_length) {
        return `inputs.${decl.key} is longer than ${val.max_length} characters`;
      }
      if (val.pattern !== undefined && !new RegExp(val.pattern, 'u').test(v)) {
        return `inputs.${decl.key} does not match ${val.pattern}`;
      }
      if (decl.type === 'select' && !val.options.includes(v)) {
        return `inputs.${decl.key} must be one of ${val.options.join(', ')}`;
      }
    }
  }
  return null;
}

// Deep value equality on decoded JSON (key order irrelevant).
function sameValue(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  if (typeof a !== 'object') return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameValue(a[k], b[k]));
}

// ---------------------------------------------------------------- execution

function newRunId() {
  if (F('run-id-reuse')) return 'run-constant';
  runCounter += 1;
  return 'nr-' + Date.now().toString(36) + '-' + runCounter + '-' + crypto.randomBytes(3).toString('hex');
}

function resolveInputs(inputs) {
  const out = {};
  for (const d of INPUTS) {
    const v = inputs[d.key];
    out[d.key] = v === undefined || v === null ? d.default : v;
  }
  return out;
}

// The agent, as a sequence of pieces. Returns {pieces, value} for text or
// {value} for bytes; throws {agentError} on a deliberate failure.
function planOutput(inputs) {
  const r = resolveInputs(inputs);
  if (r.prompt === undefined) { r.prompt = 'hello'; r.tone = 'plain'; r.repeat = 1; }
  if (r.prompt === '__fail__') { const e = new Error('the echo model refused'); e.agentError = true; throw e; }
  if (BYTES) return { value: PNG.toString('base64') };
  let text = r.prompt;
  if (r.tone === 'loud') text = text.toUpperCase() + '!';
  if (r.tone === 'whisper') text = text.toLowerCase() + '…';
  const pieces = [`Echo (${r.tone}): `];
  for (let i = 0; i < r.repeat; i++) {
    // Split each repetition in two so there are several deltas.
    const half = Math.ceil(text.length / 2);
    pieces.push(text.slice(0, half), text.slice(half) + (i + 1 < r.repeat ? '\n' : ''));
  }
  return { pieces: pieces.filter((p) => p.length), value: pieces.join('') };
}

function runBody(runId, plan) {
  const output = BYTES ? { type: 'bytes', media_type: MEDIA_TYPE, value: plan.value } : { type: 'text', value: plan.value };
  if (BYTES && F('media-type-upper')) output.media_type = MEDIA_TYPE.toUpperCase();
  return {
    postern: '0.1',
    run_id: runId,
    output,
    usage: {
      input_tokens: 12, output_tokens: BYTES ? 0 : plan.value.length,
      cost_usd: 0,
      steps: [
        { name: 'prepare', latency_ms: 5 },
        { name: 'compose', model_id: 'echo-small-1', input_tokens: 12, output_tokens: 7, latency_ms: 40 },
      ],
    },
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Idempotency: one keyspace across run and stream (§4.2).
// entry: {inputs, pending: Promise|null, result: {kind:'ok', body} | {kind:'error', code, message, detail}}
const keys = new Map();
function keyspace(verb, key) { return F('key-per-verb') ? verb + ':' + key : key; }

// ---------------------------------------------------------------- verbs

async function drain(req) {
  try { await readBody(req, 1 << 20); } catch (e) { /* ignore */ }
}

async function execVerb(req, res, verb) {
  // §4.6 step 1: level.
  const need = verb === 'run' ? 2 : 3;
  if (LEVEL < need) {
    if (READS_BODY_BEFORE.has('level')) await drain(req);
    if (F('501-binds-key') && IDEMPOTENT && req.headers['idempotency-key'] !== undefined) {
      const raw = await readBody(req, 1 << 20).catch(() => Buffer.alloc(0));
      let bb = null; try { bb = JSON.parse(raw.toString()); } catch (e) { /* */ }
      if (bb && bb.inputs) keys.set(keyspace(verb, req.headers['idempotency-key']), { inputs: bb.inputs, pending: null,
        result: { kind: 'error', code: 'not_implemented', message: `This runner is Level ${LEVEL}; ${verb} needs Level ${need}.` } });
    }
    if (F('above-level-200')) {
      sendJSON(req, res, 200, { postern: '0.1', run_id: newRunId(), output: { type: 'text', value: '' } });
      return;
    }
    sendError(req, res, 'not_implemented', `This runner is Level ${LEVEL}; ${verb} needs Level ${need}.`);
    return;
  }

  // FAULT revoked-400-first / cred-before-input reorder the checks.
  const bodyFirst = F('revoked-400-first');

  // §4.6 step 2: entitlement.
  const entitlementRefusal = () => {
    if (ENTITLEMENT === 'revoked' && !F('revoked-runs')) {
      sendError(req, res, 'not_entitled', 'Your entitlement to this agent is not in force.',
        { access_ends_at: ENDS_PAST });
      return true;
    }
    if (ENTITLEMENT === 'unknown-never') {
      if (F('never-checked-403')) sendError(req, res, 'not_entitled', 'Not entitled.');
      else sendError(req, res, 'unavailable', 'The distributor has never been reached; try again once it can be.');
      return true;
    }
    if (ENTITLEMENT === 'not_required' && F('not-required-refuses')) {
      sendError(req, res, 'not_entitled', 'Not entitled.');
      return true;
    }
    return false;
  };
  if (F('cred-before-entitlement') && missingCreds().length) {
    // decide entitlement only for a malformed request: read it first
    const raw = await readBody(req, 1 << 20).catch(() => Buffer.alloc(0));
    let b = null; try { b = JSON.parse(raw.toString()); } catch (e) { /* */ }
    const valid = b && typeof b === 'object' && b.inputs && typeof b.inputs === 'object' && !Array.isArray(b.inputs) && !validateInputs(b.inputs);
    if (valid && mediaTypeOK(req)) { sendError(req, res, 'missing_credential', 'Missing ' + missingCreds().join(', '), { missing: missingCreds() }); return; }
    if (entitlementRefusal()) return;
  }
  if (!bodyFirst && READS_BODY_BEFORE.has('entitlement') && ['revoked', 'unknown-never'].includes(ENTITLEMENT)) await drain(req);
  if (!bodyFirst && entitlementRefusal()) return;

  // §4.6 step 3: media type, decided on the head alone.
  if (!mediaTypeOK(req)) {
    sendError(req, res, 'bad_request', 'The body must be labelled Content-Type: application/json.');
    return;
  }

  // FAULT cred-before-input: step 5 before step 4.
  const missing = missingCreds();
  const credRefusal = () => {
    if (missing.length && !F('no-424') && !(F('cred-check-skipped-stream') && verb === 'stream')) {
      sendError(req, res, 'missing_credential', `This runner's environment lacks ${missing.join(', ')}.`, { missing });
      return true;
    }
    return false;
  };
  if (F('cred-before-input') && credRefusal()) return;

  // §4.6 step 4: the body.
  let raw;
  try { raw = await readBody(req, 1 << 20); } catch (e) {
    if (!res.headersSent) sendError(req, res, 'bad_request', 'The body could not be read.');
    return;
  }
  let body;
  try { body = JSON.parse(raw.toString('utf8')); } catch (e) {
    sendError(req, res, 'bad_request', 'The body is not JSON.');
    return;
  }
  if (LENIENT_INPUTS && body !== null && typeof body === 'object' && !Array.isArray(body) && body.inputs === undefined) body.inputs = {};
  if (body === null || typeof body !== 'object' || Array.isArray(body) ||
      body.inputs === null || typeof body.inputs !== 'object' || Array.isArray(body.inputs)) {
    sendError(req, res, 'bad_request', 'The body must be an object carrying an inputs map.');
    return;
  }
  const problem = validateInputs(body.inputs);
  if (F('refusal-binds-key-early') && IDEMPOTENT && req.headers['idempotency-key'] !== undefined) {
    const ks = keyspace(verb, req.headers['idempotency-key']);
    const e = keys.get(ks);
    if (e && !sameValue(e.inputs, body.inputs)) {
      sendError(req, res, 'idempotency_conflict', 'This Idempotency-Key was already answered for different inputs.');
      return;
    }
    if (!e && problem) keys.set(ks, { inputs: body.inputs, pending: null, result: { kind: 'error', code: 'bad_request', message: problem } });
  }
  if (problem) {
    if (F('refusal-binds-key')) {
      const k = req.headers['idempotency-key'];
      if (IDEMPOTENT && k && !keys.has(keyspace(verb, k))) keys.set(keyspace(verb, k), { inputs: body.inputs, pending: null, result: { kind: 'error', code: 'bad_request', message: problem } });
    }
    sendError(req, res, 'bad_request', problem);
    return;
  }
  if (bodyFirst && entitlementRefusal()) return;

  // §4.6 step 5: credentials.
  if (!F('cred-before-input') && credRefusal()) return;

  // Idempotency-Key.
  const idemKey = IDEMPOTENT ? req.headers['idempotency-key'] : undefined;
  if (idemKey !== undefined) {
    const ks = keyspace(verb, idemKey);
    const entry = F('idem-not-honoured') ? undefined : keys.get(ks);
    if (entry) {
      const same = F('byte-compare') ? JSON.stringify(entry.inputs) === JSON.stringify(body.inputs) : sameValue(entry.inputs, body.inputs);
      if (!same && !F('replay-ignores-inputs')) {
        if (F('conflict-rebinds')) entry.inputs = body.inputs;
        sendError(req, res, 'idempotency_conflict',
          'This Idempotency-Key was already answered for different inputs; send a new key.');
        return;
      }
      if (entry.pending) await entry.pending; // hold a repeat until the first is answered
      if (entry.result) { replay(req, res, verb, entry.result); return; }
      // the first was abandoned: execute again under the same key
    }
  }

  // §4.5 capacity.
  if (inFlight >= MAX_CONCURRENT) {
    sendError(req, res, 'unavailable', 'The runner is at its concurrent-run limit; retry shortly.');
    return;
  }

  let entry = null;
  if (idemKey !== undefined) {
    entry = { inputs: body.inputs, pending: null, result: null };
    keys.set(keyspace(verb, idemKey), entry);
  }
  inFlight += 1;
  let settle;
  if (entry) entry.pending = new Promise((r) => { settle = r; });
  try {
    if (verb === 'run') await doRun(req, res, body.inputs, entry);
    else await doStream(req, res, body.inputs, entry);
  } finally {
    inFlight -= 1;
    if (entry) {
      entry.pending = null;
      if (!entry.result) keys.delete(keyspace(verb, idemKey)); // abandoned: binds nothing
      settle();
    }
  }
}

function replay(req, res, verb, result) {
  if (verb === 'run') {
    if (result.kind === 'ok') {
      let body = result.body;
      if (F('replay-new-run-id')) body = { ...body, run_id: newRunId() };
      sendJSON(req, res, 200, body);
    } else sendError(req, res, result.code, result.message, result.detail);
    return;
  }
  const sse = openStream(req, res);
  if (result.kind === 'ok') {
    const runId = F('replay-new-run-id') ? newRunId() : result.body.run_id;
    sse.event('start', { run_id: runId });
    sse.event('done', F('replay-new-run-id') ? { ...result.body, run_id: runId } : result.body);
  } else {
    sse.event('start', { run_id: result.runId || newRunId() });
    sse.event('error', errorBody(result.code, result.message, result.detail));
  }
  res.end();
}

const START_LOG = env.POSTERN_START_LOG || '';
function noteStart(runId) { if (START_LOG) require('fs').appendFileSync(START_LOG, runId + '\n'); }

async function doRun(req, res, inputs, entry) {
  const runId = newRunId();
  noteStart(runId);
  let aborted = false;
  res.on('close', () => { if (!res.writableEnded) aborted = true; });
  let plan;
  try {
    plan = planOutput(inputs);
  } catch (e) {
    if (!e.agentError) throw e;
    await sleep(30);
    const message = 'The agent ran and failed: ' + e.message;
    if (entry) entry.result = { kind: 'error', runId, code: 'agent_error', message };
    sendError(req, res, 'agent_error', message);
    return;
  }
  // "Work": a few short sleeps, aborting at the next point we control.
  for (let i = 0; i < 3; i++) {
    await sleep(25 + SLOW_MS / 3);
    if (aborted) return; // §4.5: a disconnected client is a cancelled run
  }
  if (F('no-424') && missingCreds().length) {
    if (entry) entry.result = { kind: 'error', code: 'agent_error', message: 'no key' };
    sendError(req, res, 'agent_error', 'The agent failed: search backend rejected the call.');
    return;
  }
  const body = runBody(runId, plan);
  if (entry) entry.result = { kind: 'ok', body };
  sendJSON(req, res, 200, body);
}

function openStream(req, res) {
  const headers = { 'Content-Type': SSE_CT === 'charset' ? 'text/event-stream; charset=utf-8' : 'text/event-stream',
    'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' };
  corsActual(req, headers);
  res.writeHead(200, casing(headers));
  const buffered = F('stream-buffered');
  const held = [];
  const write = (s) => { if (buffered) held.push(s); else res.write(s); };
  if (SSE_BOM) write('\uFEFF');
  if (!buffered) res.flushHeaders();
  const dataLines = (payload) => {
    if (MULTILINE_DATA) {
      return JSON.stringify(payload, null, 1).split('\n').map((l) => 'data' + SSE_SEP + l + EOL).join('');
    }
    return 'data' + SSE_SEP + JSON.stringify(payload) + EOL;
  };
  const sse = {
    comment(text) { write(':' + (text ? ' ' + text : '') + EOL); },
    event(name, payload) {
      let s = '';
      if (F('retry-field') && name === 'start') s += 'retry' + SSE_SEP + '3000' + EOL;
      const ev = 'event' + SSE_SEP + name + EOL;
      const mid = SSE_INTERLEAVE_COMMENT ? ': ' + name + ' follows' + EOL : '';
      s += (SSE_DATA_FIRST ? dataLines(payload) + mid + ev : ev + mid + dataLines(payload)) + EOL;
      write(s);
    },
    flushHeld() { if (buffered) res.write(held.join('')); },
  };
  const origEnd = res.end.bind(res);
  res.end = (...a) => { sse.flushHeld(); return origEnd(...a); };
  return sse;
}

async function doStream(req, res, inputs, entry) {
  const runId = newRunId();
  noteStart(runId);
  let aborted = false;
  res.on('close', () => { if (!res.writableEnded) aborted = true; });
  const sse = openStream(req, res);
  const ping = setInterval(() => sse.comment('ping'), 15000);
  try {
    sse.comment('noderunner stream');
    if (F('start-not-first')) sse.event('step', { name: 'prepare', status: 'started' });
    sse.event('start', F('start-no-run-id') ? { id: runId } : { run_id: runId });
    if (EXTRA_EVENT) sse.event('progress', { fraction: 0 });
    const t0 = Date.now();
    sse.event('step', F('latency-on-started') ? { name: 'prepare', status: 'started', latency_ms: 0 } : { name: 'prepare', status: 'started' });
    await sleep(20 + SLOW_MS);
    if (aborted) return;
    let plan;
    try {
      plan = planOutput(inputs);
    } catch (e) {
      if (!e.agentError) throw e;
      sse.event('step', { name: 'prepare', status: 'finished', latency_ms: Date.now() - t0 });
      const err = { code: 'agent_error', message: 'The agent ran and failed: ' + e.message };
      if (entry) entry.result = { kind: 'error', runId, ...err };
      sse.event('error', errorBody(err.code, err.message));
      res.end();
      return;
    }
    sse.event('step', STEP_NO_LATENCY ? { name: 'prepare', status: 'finished' } : { name: 'prepare', status: 'finished', latency_ms: Date.now() - t0 });
    const t1 = Date.now();
    sse.event('step', F('step-no-status') ? { name: 'compose', model_id: 'echo-small-1', phase: 'started' } : { name: 'compose', model_id: 'echo-small-1', status: 'started' });
    sse.comment('ping');
    if (!BYTES || F('bytes-delta')) {
      const pieces = BYTES ? [plan.value.slice(0, 10), plan.value.slice(10)] : plan.pieces.slice();
      if (F('delta-mismatch')) pieces[pieces.length - 1] = pieces[pieces.length - 1].slice(0, -1);
      for (const p of pieces) {
        await sleep(15);
        if (aborted) return;
        sse.event('delta', { text: p });
      }
    } else {
      await sleep(30);
      if (aborted) return;
    }
    sse.event('step', { name: 'compose', model_id: 'echo-small-1', status: 'finished', latency_ms: Date.now() - t1 });
    if (EXTRA_EVENT) sse.event('progress', { fraction: 1 });
    const body = runBody(runId, plan);
    if (entry) entry.result = { kind: 'ok', body };
    if (F('stream-error-then-done')) sse.event('error', errorBody('agent_error', 'transient hiccup'));
    if (!F('no-done')) sse.event('done', F('done-run-id') ? { ...body, run_id: newRunId() } : body);
    if (F('done-twice')) sse.event('done', body);
    if (F('event-after-done')) sse.event('delta', { text: '' });
    res.end();
  } finally {
    clearInterval(ping);
  }
}

// ---------------------------------------------------------------- router

const VERBS = { describe: 'GET', status: 'GET', run: 'POST', stream: 'POST' };

async function handle(req, res) {
  const url = new URL(req.url, 'http://runner.invalid');
  const path = url.pathname;
  if (!path.startsWith(PREFIX)) {
    // Not Postern's: a plain web-server 404 (§2.1 binds nothing outside the prefix).
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('nothing here\n');
    return;
  }
  const verb = path.slice(PREFIX.length);
  const known = Object.prototype.hasOwnProperty.call(VERBS, verb);

  if (req.method === 'OPTIONS') {
    if (known) { preflight(req, res, verb); return; }
    if (F('unknown-path-bare')) { res.writeHead(404, { 'Content-Type': 'text/plain' }); res.end('404 page not found\n'); return; }
    sendError(req, res, 'not_found', `No such Postern path: ${path}`);
    return;
  }

  // §7: the runner's own inbound authentication (never for a preflight).
  const needsAuth = AUTH_TOKEN && (AUTH_SCOPE === 'all' || verb === 'run' || verb === 'stream');
  if (needsAuth && !authorized(req)) {
    if (READS_BODY_BEFORE.has('auth')) await drain(req);
    sendError(req, res, 'unauthorized', 'This runner requires Authorization: Bearer <token>.');
    return;
  }
  if (!AUTH_TOKEN && F('stray-auth-401') && req.headers.authorization) {
    sendError(req, res, 'unauthorized', 'Unexpected Authorization header.');
    return;
  }

  if (!known && F('unknown-path-400')) { sendError(req, res, 'bad_request', 'Bad path.'); return; }
  if (!known) {
    if (F('unknown-path-bare')) { res.writeHead(404, { 'Content-Type': 'text/plain' }); res.end('404 page not found\n'); return; }
    sendError(req, res, 'not_found', `No such Postern path: ${path}`);
    return;
  }
  const want = VERBS[verb];
  const ok = req.method === want || (want === 'GET' && req.method === 'HEAD');
  if (!ok) {
    if (F('bare-405')) {
      res.writeHead(405, { 'Content-Type': 'text/plain', Allow: want });
      res.end('Method Not Allowed\n');
      return;
    }
    if (WRONG_METHOD === '400') sendError(req, res, 'bad_request', `${verb} is answered to ${want} only.`);
    else sendError(req, res, 'not_found', `No ${req.method} ${path} here; ${verb} is answered to ${want}.`);
    return;
  }

  if (verb === 'describe') {
    if (F('describe-needs-ent') && ENTITLEMENT === 'revoked') { sendError(req, res, 'not_entitled', 'Not entitled.'); return; }
    sendJSON(req, res, 200, describeDoc());
    return;
  }
  if (verb === 'status') {
    if (F('status-needs-cred') && missingCreds().length) { sendError(req, res, 'unavailable', 'Missing credential.'); return; }
    sendJSON(req, res, 200, statusDoc());
    return;
  }
  await execVerb(req, res, verb);
}

const LOG = env.LOG ? require('fs').createWriteStream(env.LOG, { flags: 'a' }) : null;
const server = http.createServer((req, res) => {
  if (LOG) {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    const t = Date.now();
    res.on('finish', () => LOG.write(`${req.method} ${req.url} ct=${req.headers['content-type'] || '-'} origin=${req.headers.origin || '-'} acrm=${req.headers['access-control-request-method'] || '-'} acrh=${req.headers['access-control-request-headers'] || '-'} auth=${req.headers.authorization ? 'y' : '-'} key=${req.headers['idempotency-key'] || '-'} -> ${res.statusCode} body=${Buffer.concat(chunks).toString().slice(0, 200)} (${Date.now() - t}ms)\n`));
  }
  handle(req, res).catch((e) => {
    process.stderr.write('noderunner: ' + (e && e.stack || e) + '\n');
    if (!res.headersSent) sendError(req, res, 'agent_error', 'Internal failure.');
    else res.end();
  });
});
server.keepAliveTimeout = 30000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`POSTERN_PORT=${server.address().port}\n`);
  process.stderr.write(`noderunner: level=${LEVEL} entitlement=${ENTITLEMENT} origins=${ORIGINS.join(',') || '-'}` +
    `${AUTH_TOKEN ? ' auth=' + AUTH_SCOPE : ''}${IDEMPOTENT ? ' idempotent' : ''}${MISSING_CRED ? ' missing-cred' : ''}` +
    `${BYTES ? ' bytes' : ''}${FAULT ? ' FAULT=' + FAULT : ''}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
