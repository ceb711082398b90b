#!/usr/bin/env python3
"""An independent Postern distributor, written from SPEC.md (§1.5, §2.1,
§5.2-§5.7, §6, §7, §8) alone, in Python's standard library, to point the
distributor check at something the project's own fixture did not shape.

Three commands, all sharing one state directory:

  pydistributor.py provision --state DIR [--fault F]...
      Creates the ledger (DIR/ledger.json): a small catalogue, two buyers and
      their purchases. Issues three tokens with `secrets` and keeps only their
      SHA-256: the test buyer's current token, its predecessor (rotated away)
      and a stranger's. Prints KEY=value lines for the check's inputs:
      TOKEN, STRANGER_TOKEN, ROTATED_TOKEN, AGENT, REVOKED_AGENT,
      WITHDRAWN_AGENT, UNOWNED_AGENT.

  pydistributor.py serve --state DIR [--port N] [--window S] [--cache-ttl S]
                         [--grace S] [--profile sigrix] [--fault F]...
      Serves the check (§5.3) and bundles (§5.6) on 127.0.0.1 (plain HTTP,
      which §7 admits on loopback only). Prints POSTERN_PORT=<port> first.
      Answers come from a cache of authority reads whose lifetime is
      --cache-ttl (default: --window) and which declares --window as
      stale_after_seconds; checked_at is the read behind each answer.
      The admin API (outside the Postern prefix) is described in
      DIR/admin.json (port and a random key, mode 0600).

  pydistributor.py admin --state DIR revoke|restore AGENT_ID
      Reverses (refund) or restores the test buyer's purchase of AGENT_ID,
      returning once the authority has recorded it. Made for --revoke and
      --restore hooks.

Switches (--fault, repeatable; give the same ones to provision and serve).
Planted mistakes, each a thing a real distributor might get wrong:

  forbidden-unowned      a valid token for an agent its buyer does not own
                         is answered 403 not_entitled (§5.5)
  unauthorized-token     a token that does not resolve, or none, is
                         answered 401 unauthorized (§5.5, §2.1)
  dead-token-message     a dead token gets 404 not_found, but with its own
                         message, so it can be told from "not yours" (§5.5)
  decode-slash           the path is percent-decoded before routing, so
                         acme%2Fname reaches the agent (§5.3.1)
  fold-case              the identifier is lower-cased before the grammar
                         check and answered for, echoing the folded id
                         (§5.3.1, §5.3 agent_id)
  query-token            an OAuth-style ?access_token= wins over the
                         Authorization header (§5.3 widening)
  session-cookie         the storefront's session cookie (session=<token>)
                         is honoured ahead of the Authorization header, as
                         the web app's middleware does (§5.3 widening)
  cache-key-token        the answer cache is keyed by the token alone, so
                         one agent's answer is served for another (§5.3)
  stamp-at-reply         checked_at is the moment of the reply while the
                         answer comes from the cache (§5.3, §5.4)
  understate-stale       the cache lives five times the declared
                         stale_after_seconds, and five seconds where it
                         declares 0 (§5.4)
  refund-kept            a refund is recorded in billing but the
                         entitlement is left active (§5.4)
  restore-lost           undoing a refund never restores the entitlement
                         (§5.4)
  sibling-in-envelope    refusals carry a request_id beside error (§2.1)
  no-repr-digest         bundles carry no Repr-Digest (§5.6, a SHOULD)
  stale-repr-digest      Repr-Digest is that of an earlier build of the
                         bundle (§5.6, RFC 9530)
  withdrawn-no-date      the 410 carries no detail.access_ends_at (§5.6, a
                         SHOULD)
  withdrawn-other-date   the 410 carries the withdrawal date, not the end
                         of access the check gives (§5.6)
  token-in-bundle        the buyer's token is written into the bundle's
                         plugin.json extensions, "for the runner" (§5.2)
  jwt-tokens             (provision) tokens are JWT-shaped documents with
                         the buyer and issue time as claims (§5.2)
  short-tokens           (provision) tokens are 8 random bytes in hex, 64
                         bits (§5.2; the checker can only suspect it)
  rotation-grace         a rotated-away token keeps resolving for a day
                         (§7)
  naive-stamp            checked_at is written as Python's naive
                         isoformat(), with no UTC offset (§5.3, RFC 3339)
  no-grace-field         the check answer leaves out grace_seconds (§5.3)
  ended-404              once a withdrawn agent's access has ended, its
                         check answers 404, not revoked (§5.3, a SHOULD)
  bad-id-404             an identifier outside the grammar is looked up,
                         misses and answers 404 (§5.3.1)
  greedy-route           segments past the second are ignored by the route
                         (§5.3.1, no keyword)
  plain-404              a path under the prefix that matches no route gets
                         the framework's plain-text 404 (§2.1)
  octet-stream           bundles are labelled application/octet-stream
                         (§5.6)
  nested-zip             the bundle zips the plugin's folder, so
                         plugin.json is not at the archive's root (§6)
  auth-first             an authentication middleware runs before the
                         route: a dead token gets 404 even for an
                         identifier outside the grammar, where a live one
                         gets 400, so the 400 tells a live token (§5.5)
  bundle-crash           building the bundle raises, and the framework
                         drops the connection: the buyer never gets it
  ratelimit-buyers       RateLimit-* headers ride the bundle answers of a
                         token that resolves, and only those: a header set
                         that tells a live token from a dead one (§5.5)
  no-rate-limit          bundle retrieval is not rate-limited (§5.6, a
                         SHOULD)
  gone-to-anyone         the bundle route looks the listing up before the
                         token: a withdrawn agent whose access has ended
                         answers 410 to anyone, a stranger or no token
                         included, which confirms it exists (§5.5)
  ended-bundle-served    once a withdrawn agent's access has ended its
                         check says revoked, but its bundle is still
                         served: the storage job never ran (§5.6)
  tail-bundle-404        (with provision's tail) a withdrawn listing leaves
                         the bundle store at once: its bundle answers 404
                         while its check still answers active (§5.6)
  cache-missing-listing  the 404 for an identifier the catalogue does not
                         hold carries Cache-Control: public, max-age=300
                         (the CDN caches misses), where every other 404
                         says no-store: a header that tells the catalogue
                         apart (§5.5)
  bad-id-hint            the 400 for an identifier with capitals names its
                         lower-cased form where the catalogue lists it, so
                         the 400 varies with the catalogue (§5.3.1)
  token-in-check         the check's 200 carries the presented token back
                         as a member, "token" (§5.2)
  all-flag               an admin route's ?all=1, left unguarded, answers
                         for whichever buyer holds the agent (§5.3)
  ratelimit-one-bucket   a refused bundle request is counted only against
                         the bucket that refused it: the token's is asked
                         first, and the address's is then left alone (§5.6,
                         a SHOULD)

Both-ways switches: behaviours SPEC admits either way, which must check
clean:

  tail                   (provision) WITHDRAWN_AGENT is acme/sunset,
                         withdrawn 30 days ago and in its year's tail: its
                         check answers active with access_ends_at, and its
                         bundle is served through the tail (§8)
  tail-410               (with provision's tail) a withdrawn listing's
                         bundle answers 410 withdrawn with the date access
                         ends from the withdrawal on, while its check stays
                         active until that date (§5.3, §5.6)

  reversal-as-404        a reversed purchase is answered 404, not
                         revoked (§5.5 admits both)
  seconds-stamp          checked_at written to the whole second
                         (RFC 3339 admits both)
  fresh-reads            no cache: every answer is a fresh read, still
                         declaring stale_after_seconds (§5.3)
  detail-absent          refusals leave out error.detail instead of null
                         (only code and message are required)
  echo-bad-id            a 400 bad_request names the string it refused
                         (computed from the request alone, §5.3.1)
  grace-zero             grace_seconds 0 (§5.3, §5.7.1: a valid
                         declaration)
  offset-stamp           checked_at and access_ends_at are written with a
                         +02:00 offset (RFC 3339 admits any offset)
  clock-ahead            the distributor's clock (its Date, its stamps) runs
                         90 s ahead of the checker's: nothing binds the
                         clocks of two machines together
  clock-behind           … and 90 s behind
  plain-manifest         plugin.json carries no distributor data and no
                         extensions at all, only Agent Plugins' own members
  rate-429               a rate-limited bundle request is answered 429 with
                         code rate_limited and Retry-After (a code §2.1's
                         table does not list; its prose leaves new codes
                         open)
  extra-members          check answers carry members SPEC does not define
                         (listing_url, plan): the answer is open
  bare-json-type         JSON is labelled application/json, without the
                         charset parameter (JSON is UTF-8 by RFC 8259)
  close-connections      every answer says Connection: close and closes
  upper-charset          JSON is labelled application/json;charset=UTF-8
                         (media-type parameters are case-insensitive)
  ratelimit-headers      every bundle answer carries RateLimit-Limit,
                         -Remaining and -Reset, whatever the token
  request-ids            every answer carries a fresh X-Request-Id, and
                         every refusal the same id in error.detail (detail
                         is the envelope's extension point, §2.1)
"""
import argparse, base64, hashlib, hmac, io, json, os, re, secrets, sys, threading, time, zipfile
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, parse_qs
from urllib.request import Request, urlopen

PREFIX = "/postern/v0/"
PART = r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?"
AGENT_ID = re.compile(r"\A" + PART + "/" + PART + r"\Z")
PLUGIN_SCHEMA = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"

BUYER, STRANGER = "buyer-1001", "buyer-2002"
AGENT, REVOKED, WITHDRAWN, UNOWNED = "acme/market-research-crew", "acme/refunded", "acme/retired", "acme/not-bought"
SUNSET, OTHER = "acme/sunset", "other.labs/thing"


SKEW = 0.0  # seconds the distributor's clock is off (clock-ahead, clock-behind)


def clock():
    return time.time() + SKEW


def utc(t):
    return datetime.fromtimestamp(t, timezone.utc)


def rfc3339(t, whole_second=False, faults=()):
    d = utc(t)
    if "naive-stamp" in faults:
        return d.replace(tzinfo=None).isoformat()
    if "offset-stamp" in faults:
        d = d.astimezone(timezone(timedelta(hours=2)))
        return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03d+02:00" % (d.microsecond // 1000)
    if whole_second:
        return d.strftime("%Y-%m-%dT%H:%M:%SZ")
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def digest(token):
    return hashlib.sha256(token.encode()).hexdigest()


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def issue(buyer, faults):
    if "jwt-tokens" in faults:
        head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        body = b64url(json.dumps({"sub": buyer, "iat": int(clock()), "jti": secrets.token_hex(8)}).encode())
        return head + "." + body + "." + b64url(secrets.token_bytes(32))
    if "short-tokens" in faults:
        return secrets.token_hex(8)
    return secrets.token_urlsafe(32)  # 256 bits from the OS's CSPRNG


# ---------------------------------------------------------------- provision

def provision(args):
    faults = set(args.fault)
    os.makedirs(args.state, exist_ok=True)
    now = clock()
    day = 86400
    withdrawn_at = now - 400 * day
    tokens = {}
    old = issue(BUYER, faults)
    cur = issue(BUYER, faults)
    other = issue(STRANGER, faults)
    tokens[digest(old)] = {"buyer": BUYER, "superseded_by": digest(cur), "superseded_at": now}  # rotated away
    tokens[digest(cur)] = {"buyer": BUYER, "superseded_by": None}
    tokens[digest(other)] = {"buyer": STRANGER, "superseded_by": None}
    ledger = {
        "tokens": tokens,
        "catalogue": {
            AGENT: {"version": "1.3.0"},
            REVOKED: {"version": "0.9.2"},
            WITHDRAWN: {"version": "2.0.0", "withdrawn_at": withdrawn_at, "access_ends_at": withdrawn_at + 365 * day},
            SUNSET: {"version": "1.0.0", "withdrawn_at": now - 30 * day, "access_ends_at": now + 335 * day},
            UNOWNED: {"version": "0.1.0"},
            OTHER: {"version": "4.2.0"},
        },
        "purchases": {
            BUYER: {AGENT: "paid", REVOKED: "refunded", WITHDRAWN: "paid", SUNSET: "paid"},
            STRANGER: {OTHER: "paid"},
        },
    }
    path = os.path.join(args.state, "ledger.json")
    with open(path + ".tmp", "w") as f:
        json.dump(ledger, f)
    os.replace(path + ".tmp", path)
    withdrawn = SUNSET if "tail" in faults else WITHDRAWN
    for k, v in (("TOKEN", cur), ("STRANGER_TOKEN", other), ("ROTATED_TOKEN", old), ("AGENT", AGENT),
                 ("REVOKED_AGENT", REVOKED), ("WITHDRAWN_AGENT", withdrawn), ("UNOWNED_AGENT", UNOWNED)):
        print("%s=%s" % (k, v))


# ---------------------------------------------------------------- the distributor

class Authority:
    """The system of record: purchases and tokens. Everything else reads it
    through the cache."""

    def __init__(self, ledger, faults):
        self.lock = threading.Lock()
        self.tokens = ledger["tokens"]
        self.catalogue = ledger["catalogue"]
        self.purchases = ledger["purchases"]
        self.billing = []
        self.faults = faults

    def buyer_of(self, token):
        # Only hashes are held; compare hashes in constant time.
        h = digest(token)
        for known, rec in self.tokens.items():
            if hmac.compare_digest(known, h):
                if rec["superseded_by"] is None:
                    return rec["buyer"]
                if "rotation-grace" in self.faults and clock() - rec.get("superseded_at", 0) < 86400:
                    return rec["buyer"]  # "give the old runner a day to pick up the new token"
                return None
        return None

    def read(self, buyer, agent):
        """One consultation of the authority: what the buyer holds of agent."""
        with self.lock:
            listing = self.catalogue.get(agent)
            purchase = self.purchases.get(buyer, {}).get(agent)
            if listing is None or purchase is None:
                return None
            return {"purchase": purchase, "access_ends_at": listing.get("access_ends_at"),
                    "version": listing["version"]}

    def set_purchase(self, agent, action):
        with self.lock:
            held = self.purchases.get(BUYER, {})
            if agent not in held:
                return False
            self.billing.append((clock(), agent, action))
            if action == "revoke" and "refund-kept" not in self.faults:
                held[agent] = "refunded"
            if action == "restore" and "restore-lost" not in self.faults:
                held[agent] = "paid"
            return True


class Cache:
    """Authority reads, kept for ttl seconds; each entry keeps the moment of
    the read behind it."""

    def __init__(self, authority, ttl, faults):
        self.authority, self.ttl, self.faults = authority, ttl, faults
        self.lock = threading.Lock()
        self.entries = {}

    def get(self, token, buyer, agent):
        now = clock()
        key = digest(token) if "cache-key-token" in self.faults else (buyer, agent)
        if "fresh-reads" not in self.faults:
            with self.lock:
                hit = self.entries.get(key)
                if hit and now - hit[1] < self.ttl:
                    return hit
        read_at = clock()
        rec = self.authority.read(buyer, agent)
        if rec is not None:
            rec = dict(rec, agent=agent)
        entry = (rec, read_at)
        with self.lock:
            self.entries[key] = entry
        return entry


class Distributor:
    def __init__(self, args, ledger):
        self.faults = set(args.fault)
        self.sigrix = args.profile == "sigrix"
        # §8's 60 s and 86400 s are also the defaults off the profile.
        self.window = 60 if args.window is None else args.window
        self.grace = 0 if "grace-zero" in self.faults else (86400 if args.grace is None else args.grace)
        ttl = args.cache_ttl if args.cache_ttl is not None else self.window
        if "understate-stale" in self.faults:
            ttl = 5 * max(self.window, 1)
        self.authority = Authority(ledger, self.faults)
        self.cache = Cache(self.authority, ttl, self.faults)
        self.namespace = "org.sigrix" if self.sigrix else "org.example.pydist"
        self.listing_base = "https://sigrix.io/listings/" if self.sigrix else "https://pydist.example.org/listings/"
        self.bundles = {}
        self.lock = threading.Lock()
        self.rate = RateLimit(per_token=40, per_address=80, period=10.0, one_bucket="ratelimit-one-bucket" in self.faults)

    def bundle(self, agent, version, token):
        key = (agent, version, token if "token-in-bundle" in self.faults else None)
        with self.lock:
            if key in self.bundles:
                return self.bundles[key]
        ext = {"agent_id": agent, "listing_url": self.listing_base + agent}
        if "token-in-bundle" in self.faults:
            ext["license_key"] = token
        manifest = {"$schema": PLUGIN_SCHEMA, "name": agent.split("/")[1], "version": version,
                    "description": "A packaged agent served by pydistributor.",
                    "extensions": {self.namespace: ext}}
        if "plain-manifest" in self.faults:
            manifest = {"$schema": PLUGIN_SCHEMA, "name": agent.split("/")[1], "version": version,
                        "description": "A packaged agent.", "author": {"name": "Acme"}, "license": "MIT"}
        top = agent.split("/")[1] + "/" if "nested-zip" in self.faults else ""
        body = zip_of({top + "plugin.json": json.dumps(manifest, indent=2) + "\n",
                       top + "skills/research/SKILL.md": "---\nname: research\ndescription: Looks things up.\n---\nLook it up.\n"})
        if "stale-repr-digest" in self.faults:
            # the digest was computed when the previous build was uploaded
            manifest["version"] = "0.0.1"
            d = hashlib.sha256(zip_of({"plugin.json": json.dumps(manifest)})).digest()
        else:
            d = hashlib.sha256(body).digest()
        out = (body, "sha-256=:" + base64.b64encode(d).decode() + ":")
        with self.lock:
            self.bundles[key] = out
        return out


def zip_of(files):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 8, 15, 9, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, text)
    return buf.getvalue()


class RateLimit:
    """Fixed windows per token and per source address (§5.6's SHOULD). Every
    request, admitted or refused, counts against both buckets."""

    def __init__(self, per_token, per_address, period, one_bucket=False):
        self.per_token, self.per_address, self.period = per_token, per_address, period
        self.one_bucket = one_bucket
        self.lock = threading.Lock()
        self.counts = {}

    def admit(self, token_key, address):
        now = clock()
        window = int(now // self.period)
        with self.lock:
            if len(self.counts) > 10000:
                self.counts = {k: v for k, v in self.counts.items() if k[0] == window}
            t = self.counts[(window, "t", token_key)] = self.counts.get((window, "t", token_key), 0) + 1
            if self.one_bucket and t > self.per_token:
                return False, self.period - (now % self.period), 0  # "the token's bucket said no"
            a = self.counts[(window, "a", address)] = self.counts.get((window, "a", address), 0) + 1
        reset = self.period - (now % self.period)
        return t <= self.per_token and a <= self.per_address, reset, max(0, self.per_token - t)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pydistributor/0.1"

    def date_time_string(self, timestamp=None):
        return super().date_time_string(clock() if timestamp is None else timestamp)

    sys_version = ""
    D = None  # the Distributor

    def log_message(self, *a):
        pass

    # -- writing

    def send_bytes(self, code, body, ctype, extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if code == 404 and self.agent and "cache-missing-listing" in self.D.faults \
                and self.agent not in self.D.authority.catalogue:
            self.send_header("Cache-Control", "public, max-age=300")
        else:
            self.send_header("Cache-Control", "no-store")
        for k, v in extra:
            self.send_header(k, v)
        if self.request_id:
            self.send_header("X-Request-Id", self.request_id)
        for k, v in self.extra_headers:
            self.send_header(k, v)
        if "close-connections" in self.D.faults:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, code, obj, extra=()):
        ctype = "application/json" if "bare-json-type" in self.D.faults else "application/json; charset=utf-8"
        if "upper-charset" in self.D.faults:
            ctype = "application/json;charset=UTF-8"
        self.send_bytes(code, json.dumps(obj, separators=(",", ":")).encode(), ctype, extra)

    def refuse(self, status, code, message, detail=None, extra=()):
        if self.request_id:
            detail = dict(detail or {}, request_id=self.request_id)
        err = {"code": code, "message": message}
        if "detail-absent" not in self.D.faults or detail is not None:
            err["detail"] = detail
        doc = {"error": err}
        if "sibling-in-envelope" in self.D.faults:
            doc["request_id"] = secrets.token_hex(8)
        self.send_json(status, doc, extra)

    def not_found(self):
        # One answer for every miss: no agent, not entitled, dead token,
        # no route. Constant bytes, so nothing in it sorts guesses (§5.5).
        self.refuse(404, "not_found", "No such agent.")

    def dead_token(self):
        f = self.D.faults
        if "unauthorized-token" in f:
            return self.refuse(401, "unauthorized", "Authenticate and try again.")
        if "dead-token-message" in f:
            return self.refuse(404, "not_found", "This token is not recognised.")
        return self.not_found()

    # -- reading

    def token(self):
        if "query-token" in self.D.faults and "?" in self.path:
            q = parse_qs(self.path.split("?", 1)[1])
            if q.get("access_token"):
                return q["access_token"][0]
        if "session-cookie" in self.D.faults:
            for part in self.headers.get("Cookie", "").split(";"):
                k, _, v = part.strip().partition("=")
                if k == "session" and v:
                    return v
        auth = self.headers.get("Authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() != "bearer" or not value or " " in value.strip():
            return None
        return value.strip()

    def route(self):
        raw = self.path.split("?", 1)[0]
        if "decode-slash" in self.D.faults:
            raw = unquote(raw)
        if not raw.startswith(PREFIX):
            return None, None
        rest = raw[len(PREFIX):]
        for verb in ("entitlements", "bundles", "versions"):
            if rest.startswith(verb + "/"):
                return verb, rest[len(verb) + 1:].split("/")
        return "", None

    # -- the endpoints

    request_id = None
    extra_headers = ()
    agent = None

    def do_GET(self):
        self.agent = None
        if "request-ids" in self.D.faults:
            self.request_id = secrets.token_hex(8)
        verb, segs = self.route()
        if verb is None:
            if self.path.split("?")[0] == "/":
                return self.send_bytes(200, b"pydistributor\n", "text/plain; charset=utf-8")
            return self.send_bytes(404, b"not here\n", "text/plain; charset=utf-8")
        if "greedy-route" in self.D.faults and segs and len(segs) > 2:
            segs = segs[:2]
        if not verb or len(segs) != 2:
            if "plain-404" in self.D.faults:
                return self.send_bytes(404, b"404 page not found\n", "text/plain; charset=utf-8")
            return self.not_found()  # §5.3.1: not two segments, no route
        agent = "/".join(segs)
        if "auth-first" in self.D.faults and verb != "versions":
            tk = self.token()
            if not tk or self.D.authority.buyer_of(tk) is None:
                return self.dead_token()
        if "fold-case" in self.D.faults:
            agent = agent.lower()
        if len(agent) > 128 or not AGENT_ID.match(agent):
            if "bad-id-404" in self.D.faults:
                return self.not_found()
            msg = "Not an agent identifier."
            if "echo-bad-id" in self.D.faults:
                msg = "Not an agent identifier: %s" % json.dumps("/".join(segs))[:200]
            if "bad-id-hint" in self.D.faults and agent.lower() in self.D.authority.catalogue:
                msg += " Identifiers are lower-case: did you mean %s?" % agent.lower()
            return self.refuse(400, "bad_request", msg)
        if verb == "versions":
            return self.version(agent)
        self.agent = agent
        token = self.token()
        if verb == "bundles" and "no-rate-limit" not in self.D.faults:
            ok, retry, left = self.D.rate.admit(digest(token or ""), self.client_address[0])
            retry = str(max(1, int(retry + 0.999)))
            if "ratelimit-headers" in self.D.faults or "ratelimit-buyers" in self.D.faults:
                self.extra_headers = [("RateLimit-Limit", str(self.D.rate.per_token)), ("RateLimit-Remaining", str(left)),
                                      ("RateLimit-Reset", retry)]
            if not ok:
                after = (("Retry-After", retry),)
                if "rate-429" in self.D.faults:
                    return self.refuse(429, "rate_limited", "Too many bundle requests; retry shortly.", extra=after)
                return self.refuse(503, "unavailable", "Too many bundle requests; retry shortly.", extra=after)
        listing = self.D.authority.catalogue.get(agent)
        if verb == "bundles" and "gone-to-anyone" in self.D.faults and listing and listing.get("withdrawn_at") \
                and listing["access_ends_at"] <= clock():
            return self.gone(listing, listing["access_ends_at"])  # "the listing decides before the buyer"
        buyer = self.D.authority.buyer_of(token) if token else None
        if buyer is None:
            if "ratelimit-buyers" in self.D.faults:
                self.extra_headers = []
            return self.dead_token()
        if "all-flag" in self.D.faults and "?" in self.path and parse_qs(self.path.split("?", 1)[1]).get("all") == ["1"]:
            with self.D.authority.lock:  # the admin route's view: whoever holds it
                buyer = next((b for b, held in self.D.authority.purchases.items() if held.get(agent) == "paid"), buyer)
        rec, read_at = self.D.cache.get(token, buyer, agent)
        if verb == "entitlements":
            return self.check(agent, rec, read_at, token)
        return self.fetch(agent, rec, token)

    def check(self, agent, rec, read_at, token):
        D = self.D
        if rec is None:
            if "forbidden-unowned" in D.faults:
                return self.refuse(403, "not_entitled", "You have not bought this agent.")
            return self.not_found()
        now = clock()
        ends = rec.get("access_ends_at")
        if rec["purchase"] == "refunded":
            if "reversal-as-404" in D.faults:
                return self.not_found()
            state = "revoked"
        elif ends is not None and ends <= now:
            state = "revoked"  # access ran out on the date we gave
        else:
            state = "active"
        stamp = now if "stamp-at-reply" in D.faults else read_at
        doc = {"postern": "0.1", "state": state,
               "agent_id": rec["agent"],
               "checked_at": rfc3339(stamp, "seconds-stamp" in D.faults, D.faults),
               "stale_after_seconds": D.window, "grace_seconds": D.grace}
        if "extra-members" in D.faults:
            doc.update(listing_url=D.listing_base + rec["agent"], plan="pro")
        if "no-grace-field" in D.faults:
            del doc["grace_seconds"]
        if "token-in-check" in D.faults:
            doc["token"] = token  # "echo the session, for debugging"
        if ends is not None:
            if state == "revoked" and "ended-404" in D.faults:
                return self.not_found()
            doc["access_ends_at"] = rfc3339(ends, True, D.faults)
        self.send_json(200, doc)

    def fetch(self, agent, rec, token):
        D = self.D
        if rec is None or rec["purchase"] != "paid":
            if rec is None and "forbidden-unowned" in D.faults:
                return self.refuse(403, "not_entitled", "You have not bought this agent.")
            return self.not_found()
        ends = rec.get("access_ends_at")
        listing = D.authority.catalogue.get(agent, {})
        if ends is not None and ends <= clock() and "ended-bundle-served" not in D.faults:
            return self.gone(listing, ends)
        if listing.get("withdrawn_at") is not None and ends is not None and ends > clock():
            if "tail-410" in D.faults:
                return self.gone(listing, ends)  # the bundle goes at withdrawal; the check runs to the date
            if "tail-bundle-404" in D.faults:
                return self.not_found()
        if "bundle-crash" in D.faults:
            raise RuntimeError("bundle storage unavailable")
        body, repr_digest = D.bundle(agent, rec["version"], token)
        extra = () if "no-repr-digest" in D.faults else (("Repr-Digest", repr_digest),)
        ctype = "application/octet-stream" if "octet-stream" in D.faults else "application/zip"
        self.send_bytes(200, body, ctype, extra)

    def gone(self, listing, ends):
        D = self.D
        if "withdrawn-no-date" in D.faults:
            detail = None
        elif "withdrawn-other-date" in D.faults:
            detail = {"access_ends_at": rfc3339(listing["withdrawn_at"], True, D.faults)}
        else:
            detail = {"access_ends_at": rfc3339(ends, True, D.faults)}
        return self.refuse(410, "withdrawn", "This agent was withdrawn; access to it ends on the date given.", detail)

    def version(self, agent):
        # §8: reads no token, names no buyer.
        if not self.D.sigrix:
            return self.not_found()
        listing = self.D.authority.catalogue.get(agent)
        if listing is None or listing.get("withdrawn_at") is not None:
            return self.not_found()
        self.send_json(200, {"postern": "0.1", "agent_id": agent, "version": listing["version"]})

    def do_HEAD(self):
        self.do_GET()

    def other_method(self):
        n = int(self.headers.get("Content-Length") or 0)
        if 0 < n <= 1 << 16:
            self.rfile.read(n)
        elif n:
            self.close_connection = True
        if self.path.startswith("/_admin/") and self.command == "POST":
            return self.admin()
        verb, _ = self.route()
        if verb is None:
            return self.send_bytes(404, b"not here\n", "text/plain; charset=utf-8")
        self.not_found()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = other_method

    # -- the admin API (outside the Postern prefix; loopback, keyed)

    def admin(self):
        if not hmac.compare_digest(self.headers.get("X-Admin-Key", ""), self.server.admin_key):
            return self.send_bytes(403, b"no\n", "text/plain")
        m = re.fullmatch(r"/_admin/purchases/(revoke|restore)/(" + PART + "/" + PART + ")", self.path)
        if not m or not self.D.authority.set_purchase(m.group(2), m.group(1)):
            return self.send_bytes(404, b"no such purchase\n", "text/plain")
        self.send_bytes(204, b"", "text/plain")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        print("pydistributor: %s" % (sys.exc_info()[1],), file=sys.stderr)


def serve(args):
    with open(os.path.join(args.state, "ledger.json")) as f:
        ledger = json.load(f)
    global SKEW
    Handler.D = Distributor(args, ledger)
    SKEW = {"clock-ahead": 90.0, "clock-behind": -90.0}.get(next((f for f in args.fault if f.startswith("clock-")), ""), 0.0)
    srv = Server(("127.0.0.1", args.port), Handler)
    srv.admin_key = secrets.token_urlsafe(24)
    port = srv.server_address[1]
    print("POSTERN_PORT=%d" % port, flush=True)
    admin = os.path.join(args.state, "admin.json")
    fd = os.open(admin + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"url": "http://127.0.0.1:%d" % port, "key": srv.admin_key}, f)
    os.replace(admin + ".tmp", admin)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


def admin(args):
    with open(os.path.join(args.state, "admin.json")) as f:
        a = json.load(f)
    req = Request("%s/_admin/purchases/%s/%s" % (a["url"], args.action, args.agent), method="POST",
                  data=b"", headers={"X-Admin-Key": a["key"]})
    try:
        with urlopen(req, timeout=10) as r:
            if r.status != 204:
                sys.exit("admin: %s %s answered %d" % (args.action, args.agent, r.status))
    except OSError as e:
        sys.exit("admin: %s %s: %s" % (args.action, args.agent, e))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pv = sub.add_parser("provision")
    pv.add_argument("--state", required=True)
    pv.add_argument("--fault", action="append", default=[])
    sv = sub.add_parser("serve")
    sv.add_argument("--state", required=True)
    sv.add_argument("--port", type=int, default=0)
    sv.add_argument("--window", type=int)
    sv.add_argument("--cache-ttl", type=float)
    sv.add_argument("--grace", type=int)
    sv.add_argument("--profile", choices=["sigrix"])
    sv.add_argument("--fault", action="append", default=[])
    ad = sub.add_parser("admin")
    ad.add_argument("--state", required=True)
    ad.add_argument("action", choices=["revoke", "restore"])
    ad.add_argument("agent")
    args = p.parse_args()
    {"provision": provision, "serve": serve, "admin": admin}[args.cmd](args)


if __name__ == "__main__":
    main()
