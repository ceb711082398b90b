#!/usr/bin/env node
// nodeclient: run a Postern agent once from the command line (Node 20, no
// dependencies). Written from SPEC.md alone.
//
//   node nodeclient.mjs [--url URL] [--verb run|stream] [-i KEY=VALUE]... [-o FILE] [TEXT...]
//
// URL and verb default to $POSTERN_URL and $POSTERN_VERB. Required inputs the
// user left out are filled with placeholders; TEXT goes to `prompt` (or the
// first required text input). The output goes to stdout, everything else to
// stderr. Exit 0 when the run succeeded, 1 when it failed or was refused,
// 2 on a usage error. $CLIENT_FAULT (or --fault) plants a mistake: README.md.
import { parseArgs } from 'node:util';
import { writeFileSync } from 'node:fs';

const USAGE = 'usage: node nodeclient.mjs [--url URL] [--verb run|stream] [-i KEY=VALUE]... [-o FILE] [--fault NAME] [TEXT...]';
let parsed;
try {
  parsed = parseArgs({ allowPositionals: true, options: {
    url: { type: 'string', default: process.env.POSTERN_URL },
    verb: { type: 'string', default: process.env.POSTERN_VERB || 'run' },
    input: { type: 'string', short: 'i', multiple: true, default: [] },
    output: { type: 'string', short: 'o' },
    fault: { type: 'string', default: process.env.CLIENT_FAULT || '' },
    help: { type: 'boolean', short: 'h' },
  } });
} catch (e) {
  console.error(`${e.message}\n${USAGE}`);
  process.exit(2);
}
const { values: opt, positionals } = parsed;
if (opt.help) { console.log(USAGE); process.exit(0); }
const FAULTS = new Set(opt.fault.split(',').filter(Boolean));
const fault = (name) => FAULTS.has(name);
const say = (...a) => console.error('postern:', ...a);

class Failure extends Error {}             // the run failed or was refused: exit 1
const fail = (msg) => { throw new Failure(msg); };

// ---- HTTP ----------------------------------------------------------------

const base = (opt.url || '').replace(/\/+$/, '');
const url = (verb) => `${base}/postern/v0/${verb}`;

async function get(verb) {
  const res = await fetch(url(verb), { redirect: 'manual', signal: AbortSignal.timeout(10000) });
  const body = await res.text();
  if (!res.ok) { refusal(res.status, body, verb); fail(`${verb}: HTTP ${res.status}`); }
  return strict(parseJSON(body, verb), verb);
}

function parseJSON(text, what) {
  try { return JSON.parse(text); } catch { fail(`${what}: the runner sent something that is not JSON`); }
}

// A non-2xx answer: read the envelope, show its message, fail by status class.
function refusal(status, text, verb) {
  let err = {};
  try { err = JSON.parse(text).error || {}; } catch { /* not an envelope: the status says enough */ }
  if (fault('strict-decode')) strict(JSON.parse(text), 'error');
  explain(err, status, verb);
}

const HINTS = {
  bad_request: 'the runner refused the request as malformed',
  unauthorized: 'the runner wants authentication of its own',
  not_found: 'the runner does not serve that path',
  not_entitled: 'you are not entitled to run this agent',
  idempotency_conflict: 'that idempotency key was used with other inputs',
  missing_credential: 'the runner lacks a credential the agent needs',
  agent_error: 'the agent ran and failed',
  not_implemented: 'the runner does not serve this verb at its level',
  unavailable: 'the runner is not ready; trying again later may help',
  run_timeout: "the run reached the runner's time limit",
};

function explain(err, status, verb) {
  const code = typeof err.code === 'string' ? err.code : '';
  const message = typeof err.message === 'string' ? err.message : '';
  if (fault('code-switch')) return switchOnCode(code, message);
  let hint = HINTS[code];
  if (!hint) hint = !status ? 'the run failed' : status >= 500 ? 'the runner failed' : status >= 400 ? 'the runner refused the request' : 'unexpected answer';
  const where = status ? `HTTP ${status}` : 'stream error';
  if (code === 'missing_credential' && Array.isArray(err.detail?.missing)) hint += `: set ${err.detail.missing.join(', ')}`;
  if (code === 'run_timeout' && err.detail?.max_run_seconds) hint += ` (${err.detail.max_run_seconds} s)`;
  fail(`${verb}: ${hint} (${where}${code ? `, ${code}` : ''})${message ? `: ${message}` : ''}`);
}

// FAULT code-switch: one case per code known when this was written, no default.
function switchOnCode(code, message) {
  switch (code) {
    case 'bad_request': case 'unauthorized': case 'not_found': case 'not_entitled':
    case 'idempotency_conflict': case 'missing_credential': case 'agent_error':
    case 'not_implemented': case 'unavailable': case 'run_timeout':
      fail(`${HINTS[code]}: ${message}`);
  }
}

// FAULT strict-decode: reject any member this client does not know.
const KNOWN = {
  describe: 'postern agent inputs output capabilities credentials examples',
  status: 'postern level state agent entitlement credentials idempotent_retry limits update',
  run: 'postern run_id output usage', done: 'postern run_id output usage',
  error: 'error', start: 'run_id', delta: 'text', step: 'name model_id status latency_ms',
  input: 'key label type required default validation',
  validation: 'max_length min max pattern options',
};
function strict(doc, what) {
  if (!fault('strict-decode') || !doc || typeof doc !== 'object') return doc;
  const check = (obj, kind) => {
    for (const k of Object.keys(obj || {})) if (!KNOWN[kind].split(' ').includes(k)) fail(`${what}: unexpected member "${k}"`);
  };
  check(doc, what);
  if (what === 'describe') for (const inp of doc.inputs || []) { check(inp, 'input'); check(inp.validation, 'validation'); }
  return doc;
}

// ---- describe: credentials and inputs --------------------------------------

// A describe may name credentials, never carry one (§4.1.3, §7).
function credentialLeak(describe) {
  const raw = JSON.stringify(describe);
  for (const [i, c] of (Array.isArray(describe.credentials) ? describe.credentials : []).entries()) {
    if (!c || typeof c !== 'object') continue;
    for (const k of Object.keys(c)) {
      if (!['env', 'purpose', 'signup_url'].includes(k) && /value|secret|token|key|password/i.test(k)) return `credentials[${i}] carries "${k}"`;
    }
    if (typeof c.env === 'string' && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(c.env)) return `credentials[${i}].env is not a variable name`;
    const mine = process.env[c.env];
    if (mine && mine.length >= 8 && raw.includes(mine)) return `it contains the value of ${c.env}`;
    for (const v of Object.values(c)) {
      if (typeof v === 'string' && /\b(sk-|sk_live_|ghp_|xox[abprs]-|AKIA)[A-Za-z0-9_-]{8,}/.test(v)) return `credentials[${i}] holds what looks like a key`;
    }
  }
  return null;
}

function placeholder(inp, text) {
  const v = inp.validation && typeof inp.validation === 'object' ? inp.validation : {};
  if (inp.type === 'select' && Array.isArray(v.options) && v.options.length) return v.options[0];
  if (inp.type === 'number') {
    const lo = typeof v.min === 'number' ? v.min : null, hi = typeof v.max === 'number' ? v.max : null;
    // one step inside the bounds where they leave room: SPEC does not say whether they are inclusive
    if (lo !== null) return hi === null || lo + 1 <= hi ? lo + 1 : lo;
    return hi !== null ? Math.min(1, hi - 1) : 1;
  }
  // text, and any type this client does not know, is text (§4.1.1)
  const max = Number.isInteger(v.max_length) && v.max_length > 0 ? v.max_length : Infinity;
  for (const s of [text, 'hello', 'example', 'x', 'A', '1']) {
    if (!s) continue;
    const cut = s.slice(0, max);
    try { if (typeof v.pattern !== 'string' || new RegExp(v.pattern, 'u').test(cut)) return cut; } catch { return cut; }
  }
  return 'hello';
}

function buildInputs(describe) {
  const inputs = {};
  const decl = Array.isArray(describe.inputs) ? describe.inputs : [];
  for (const pair of opt.input) {
    const eq = pair.indexOf('=');
    const key = pair.slice(0, eq), d = decl.find((x) => x.key === key);
    if (eq < 1 || !d) { say(`usage: no input "${key}" (inputs: ${decl.map((x) => x.key).join(', ')})`); process.exit(2); }
    inputs[key] = d.type === 'number' ? Number(pair.slice(eq + 1)) : pair.slice(eq + 1);
  }
  const text = positionals.join(' ');
  const textTarget = decl.find((x) => x.key === 'prompt') || decl.find((x) => x.required && !['number', 'select'].includes(x.type));
  for (const d of decl) {
    if (!KNOWN_TYPES.has(d.type)) say(`input "${d.key}" has type "${d.type}", which this client takes as text`);
    if (d.key in inputs || !(d.required || (d === textTarget && text))) continue;
    inputs[d.key] = placeholder(d, d === textTarget ? text : '');
    if (d !== textTarget || !text) say(`filled required input "${d.key}" with ${JSON.stringify(inputs[d.key])}`);
  }
  return inputs;
}
const KNOWN_TYPES = new Set(['text', 'number', 'select']);

// ---- the request ---------------------------------------------------------

async function post(verb, inputs) {
  const headers = fault('text-plain') ? {} : { 'Content-Type': 'application/json; charset=utf-8' };
  if (verb === 'stream') headers.Accept = 'text/event-stream';
  for (;;) {
    const res = await fetch(url(verb), { method: 'POST', headers, body: JSON.stringify({ inputs }), redirect: 'manual' });
    if (res.status === 503 && fault('retry-503')) { await res.text(); await sleep(500); continue; }
    return res;
  }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function runOnce(inputs) {
  const res = await post('run', inputs);
  const text = await res.text();
  if (!res.ok) return refusal(res.status, text, 'run');
  render(strict(parseJSON(text, 'run'), 'run'));
}

// ---- the event stream (HTML Living Standard grammar, §4.3) -------------------

// Feeds decoded text in, hands each complete event to onEvent(name, data).
function eventReader(onEvent) {
  let rest = '', sawCR = false, name = '', data = [];
  const field = (line) => {
    if (line === '') {
      if (data.length) onEvent(name || 'message', data.join('\n'));
      name = ''; data = [];
      return;
    }
    if (line.startsWith(':')) return;                      // a comment
    const c = line.indexOf(':');
    const key = c < 0 ? line : line.slice(0, c);
    let value = c < 0 ? '' : line.slice(c + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (fault('need-space') && key === 'data' && !line.startsWith('data: ')) return;
    if (key === 'event') name = value;
    else if (key === 'data') {
      if (fault('line-events')) return onEvent(name || 'message', value);
      data.push(value);
    } else if (key === 'retry' && /^\d+$/.test(value)) reader.retry = Number(value);
    // id, and any field this client does not know, is ignored
  };
  const reader = {
    retry: 1000,
    feed(text) {
      if (sawCR && text.startsWith('\n')) text = text.slice(1);  // the \n of a CRLF split across chunks
      if (text) sawCR = text.endsWith('\r');
      const lines = (rest + text).split(/\r\n|\r|\n/);
      rest = lines.pop();
      for (const line of lines) field(line);
    },
  };
  return reader;
}

async function streamOnce(inputs) {
  let result = null, deltas = '', reconnects = 0;
  for (;;) {
    const res = await post('stream', inputs);
    if (!res.ok) return refusal(res.status, await res.text(), 'stream');
    const type = (res.headers.get('content-type') || '').split(';')[0].trim().toLowerCase();
    if (type !== 'text/event-stream') fail(`stream: the runner answered ${type || 'without a media type'}, not an event stream`);
    const reader = eventReader((name, data) => {
      if (result) return;
      const known = ['start', 'step', 'delta', 'done', 'error'].includes(name);
      if (!known) {
        if (fault('abort-unknown-event')) fail(`stream: unknown event "${name}"`);
        return;                                       // unknown events are skipped (§4.3)
      }
      const payload = strict(parseJSON(data, `stream ${name} event`), name);
      if (name === 'start') say(`run ${payload.run_id} started`);
      else if (name === 'step' && payload.name) say(`step ${payload.name} ${payload.status || ''}`.trim());
      else if (name === 'delta' && typeof payload.text === 'string') {
        deltas += payload.text;
        if (fault('print-deltas')) process.stdout.write(payload.text);
      } else if (name === 'done' || name === 'error') result = { name, payload };
    });
    const body = res.body.getReader();
    const utf8 = new TextDecoder('utf-8');
    try {
      while (!result) {
        const { value, done } = await body.read();
        if (done) break;
        reader.feed(utf8.decode(value, { stream: true }));
      }
    } catch (e) {
      if (e instanceof Failure) throw e;
      say(`stream: the connection broke (${e.cause?.code || e.message})`);
    }
    body.cancel().catch(() => {});
    if (result) break;
    // A reopened stream is a new run, paid for again (§4.5): do not reconnect.
    if (!fault('reconnect') || reconnects++ >= 3) fail('stream: ended before the run finished; not reconnecting, since that would start the run again');
    say(`stream dropped; reconnecting in ${reader.retry} ms`);
    await sleep(reader.retry);
  }
  if (result.name === 'error') explain(result.payload.error || {}, 0, 'stream');
  else if (fault('print-deltas') && deltas) return;
  else render(result.payload, deltas);
}

// ---- rendering the outcome ---------------------------------------------------

const EXT = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/svg+xml': 'svg', 'application/pdf': 'pdf', 'text/csv': 'csv', 'application/json': 'json' };

function render(body, deltas) {
  const out = body && body.output;
  if (!out || typeof out.value !== 'string') fail('the runner answered without an output value');
  if (typeof body.usage?.cost_usd === 'number') say(`estimated cost $${body.usage.cost_usd} (advisory, not a bill)`);
  if (out.type === 'text' || fault('any-as-text')) {
    if (deltas !== undefined && deltas !== '' && deltas !== out.value) say('note: the streamed text differed from the final result; showing the final result');
    process.stdout.write(out.value + (process.stdout.isTTY && !out.value.endsWith('\n') ? '\n' : ''));
  } else if (out.type === 'bytes') {
    const media = String(out.media_type || 'application/octet-stream').toLowerCase();  // RFC 6838 names ignore case
    const bytes = Buffer.from(out.value, 'base64');
    if (opt.output) { writeFileSync(opt.output, bytes); say(`saved ${media} (${bytes.length} bytes) to ${opt.output}`); }
    else if (!process.stdout.isTTY) process.stdout.write(bytes);   // piped: pass the artifact through, like curl
    else {
      const file = `postern-${String(body.run_id || 'output').replace(/[^\w.-]/g, '_')}.${EXT[media] || 'bin'}`;
      writeFileSync(file, bytes);
      say(`saved ${media} (${bytes.length} bytes) to ${file}`);
    }
  } else {
    // The run succeeded; this client just cannot show it (§4.1.4).
    say(`the agent returned output of type "${out.type}", which this client cannot display; the run itself succeeded`);
  }
}

// ---- main ------------------------------------------------------------------

async function main() {
  if (!/^https?:\/\/[^/]/.test(base)) { say('usage: set POSTERN_URL or --url to the runner origin, e.g. http://127.0.0.1:8765'); return 2; }
  if (!['run', 'stream'].includes(opt.verb)) { say(`usage: --verb is run or stream, not "${opt.verb}"`); return 2; }
  const describe = await get('describe');
  const leak = credentialLeak(describe);
  if (leak) fail(`refusing to use this runner: its describe exposes a credential (${leak})`);
  const agent = describe.agent || {};
  say(`${agent.name || agent.id || 'agent'} ${agent.version || ''}`.trim());
  const writes = describe.capabilities?.write_tools;
  if (Array.isArray(writes) && writes.length) say(`this agent may use tools with side effects: ${writes.join(', ')}`);
  const declared = describe.output?.type;
  if (declared && !['text', 'bytes'].includes(declared)) say(`the agent declares output of type "${declared}", which this client cannot display`);

  let verb = opt.verb;
  if (fault('level-from-describe')) {
    // FAULT: the withdrawn capabilities.streaming flag, taken as the level.
    if (verb === 'stream' && describe.capabilities?.streaming === false) verb = 'run';
  } else {
    const status = await get('status');
    if (status.agent?.id && agent.id && status.agent.id !== agent.id) say(`warning: status names ${status.agent.id}, describe ${agent.id}`);
    if (status.state === 'degraded') say('warning: the runner reports a missing credential; the run will likely be refused');
    const level = status.level;
    if (!Number.isInteger(level)) fail('status: the runner did not report its level; not guessing one');
    if (level < 2) fail(`this runner is Level ${level}: it describes its agent but does not run it`);
    if (verb === 'stream' && level < 3) { say(`this runner is Level ${level} and cannot stream; running without progress instead`); verb = 'run'; }
  }
  const inputs = buildInputs(describe);
  if (verb === 'stream') await streamOnce(inputs); else await runOnce(inputs);
  return 0;
}

main().then((code) => { process.exitCode = code; }, (e) => {
  if (e instanceof Failure) say(e.message);
  else say(`error: ${e.cause?.code === 'ECONNREFUSED' ? `nothing answers at ${base}` : e.message}`);
  process.exitCode = 1;
});
