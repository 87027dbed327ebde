#!/usr/bin/python3
"""A WebHDFS protocol simulator, written from Apache's published WebHDFS REST
API document (Hadoop 3). It is not Hadoop: no Hadoop code runs here; it only
answers the read-only part of the protocol the way that document (and, where
the document is silent, Hadoop's NameNode/DataNode) describes.

Usage: webhdfs_sim.py --config CONFIG.json --ready-file PORTS.json
                      --log-file REQUESTS.jsonl

It starts one HTTP(S) server per configured NameNode and one DataNode, all on
127.0.0.1 with ephemeral ports, then writes {"namenodes": [...], "datanode": N}
to the ready file (atomically). SIGTERM or SIGINT stops it with status 0.

Config (JSON):
  namenodes     [{"state": "active"|"standby"}, ...]   one or more; a
                "noredirect": false entry answers OPEN with the 307 even
                when asked for noredirect=true (NameNodes before Hadoop 2.8)
  files         {"/abs/path": size_in_bytes, ...}
  dirs          ["/abs/dir", ...]          extra empty directories
  denied        ["/abs/path", ...]         any op on it or below -> 403
  require_user  "alice"                    user.name must equal this
  negotiate     null | {} | {"keytab": "HTTP.keytab"}   SPNEGO on NameNodes
  tls           null | {"cert": "cert.pem", "key": "key.pem"}
Relative cert, key and keytab paths are taken from the config file's folder.

The content of a file is never stored: the byte at offset o of file p is
(o + len(p)) % 251, len(p) being the length of the path in UTF-8 bytes
(= characters for ASCII paths).

Every request is appended to the log file as one JSON line once its response
is finished: server, method, path, query, status, bytes (body bytes actually
sent), user (user.name), auth ("negotiate" when a token was accepted) and
principal.

Only the Python standard library is used, plus the gssapi module (Debian:
python3-gssapi) when negotiate names a keytab; the shebang is Debian's python3
because that is the interpreter python3-gssapi installs for.
"""

import argparse
import base64
import hashlib
import http.server
import json
import os
import posixpath
import re
import signal
import socketserver
import ssl
import sys
import threading
import urllib.parse

PREFIX = "/webhdfs/v1"
PERIOD = 251
# A whole number of periods, so every chunk of a body starts at the same phase
# of the pattern; about 1 MiB per send keeps the per-call overhead negligible.
CHUNK = PERIOD * 4177
PATTERN = bytes(range(PERIOD)) * (CHUNK // PERIOD + 1)
MTIME_MS = 1700000000000  # fixed, so listings are reproducible
ROOT_FILE_ID = 16385  # what Hadoop gives "/"
NAMENODE_RPC = "127.0.0.1:8020"

JAVA_CLASSES = {
    "AccessControlException": "org.apache.hadoop.security.AccessControlException",
    "AuthenticationException":
        "org.apache.hadoop.security.authentication.client.AuthenticationException",
    "EOFException": "java.io.EOFException",
    "FileNotFoundException": "java.io.FileNotFoundException",
    "IllegalArgumentException": "java.lang.IllegalArgumentException",
    "IOException": "java.io.IOException",
    "StandbyException": "org.apache.hadoop.ipc.StandbyException",
    "UnsupportedOperationException": "java.lang.UnsupportedOperationException",
}
NN_OPS = ("LISTSTATUS", "GETFILESTATUS", "OPEN")
STANDBY_MESSAGE = ("Operation category READ is not supported in state standby. "
                   "Visit https://s.apache.org/sbnn-error")
INTEGER = re.compile(r"[+-]?[0-9]+\Z")  # Java's Long.parseLong, not Python's int()


class ConfigError(Exception):
    pass


class WebHdfsError(Exception):
    """A RemoteException answer: HTTP status, exception name, message."""

    def __init__(self, status, exception, message):
        super().__init__(message)
        self.status = status
        self.exception = exception
        self.message = message


def _parents(path):
    while path != "/":
        path = posixpath.dirname(path)
        yield path


def _check_path(where, path):
    if not isinstance(path, str) or not path.startswith("/"):
        raise ConfigError(f"{where}: {path!r} is not an absolute path")
    parts = path.split("/")[1:]
    if path != "/" and any(p in ("", ".", "..") for p in parts):
        raise ConfigError(f"{where}: {path!r} is not a normalized path")
    return path


class Namespace:
    """The simulated file tree: files with sizes, directories, denied paths."""

    def __init__(self, files, dirs, denied):
        self.files = files
        self.denied = denied
        self.dirs = {"/"}
        # A denied path that is not a file is shown as a (private) directory.
        for d in list(dirs) + [p for p in denied if p not in files]:
            self.dirs.add(d)
        for p in list(files) + list(self.dirs):
            self.dirs.update(_parents(p))
        clash = sorted(set(files) & self.dirs)
        if clash:
            raise ConfigError(f"{clash[0]} is both a file and a directory")
        self.children = {d: [] for d in self.dirs}
        for p in sorted(set(files) | self.dirs):
            if p != "/":
                self.children[posixpath.dirname(p)].append(posixpath.basename(p))
        self.ids = {p: ROOT_FILE_ID + i
                    for i, p in enumerate(sorted(set(files) | self.dirs))}

    def kind(self, path):
        if path in self.files:
            return "FILE"
        if path in self.dirs:
            return "DIRECTORY"
        return None

    def denied_by(self, path):
        for d in self.denied:
            if d == "/" or path == d or path.startswith(d + "/"):
                return d
        return None

    def status(self, path, suffix):
        is_file = path in self.files
        if path in self.denied:
            permission = "600" if is_file else "700"
        else:
            permission = "644" if is_file else "755"
        return {
            "accessTime": 0,
            "blockSize": 134217728,
            "childrenNum": 0 if is_file else len(self.children[path]),
            "fileId": self.ids[path],
            "group": "supergroup",
            "length": self.files[path] if is_file else 0,
            "modificationTime": MTIME_MS,
            "owner": "hdfs",
            "pathSuffix": suffix,
            "permission": permission,
            "replication": 3,
            "storagePolicy": 0,
            "type": "FILE" if is_file else "DIRECTORY",
        }


class Acceptor:
    """SPNEGO acceptor over MIT Kerberos, credentials from one keytab."""

    def __init__(self, gssapi, keytab):
        self.gssapi = gssapi
        os.environ["KRB5_KTNAME"] = keytab
        # No replay-cache file under /var/tmp: the cache is kept below instead.
        os.environ["KRB5RCACHETYPE"] = "none"
        self.creds = gssapi.Credentials(usage="accept")
        self.seen = set()
        self.lock = threading.Lock()

    def accept(self, token):
        """Returns (principal or None if another leg is needed, output token)."""
        # Hadoop's Java acceptor rejects a replayed token; so does this one.
        digest = hashlib.sha256(token).digest()
        with self.lock:
            if digest in self.seen:
                raise ValueError("Request is a replay (34)")
        ctx = self.gssapi.SecurityContext(creds=self.creds, usage="accept")
        out = ctx.step(token)
        if not ctx.complete:
            return None, out
        with self.lock:
            self.seen.add(digest)
        return str(ctx.initiator_name), out


class Sim:
    """What all servers share: config, namespace, request log, DataNode port."""

    def __init__(self, cfg, log):
        self.cfg = cfg
        self.ns = cfg["ns"]
        self.tls = cfg["tls_context"]
        self.acceptor = cfg["acceptor"]
        self.log_file = log
        self.log_lock = threading.Lock()
        self.datanode_port = None

    def log(self, entry):
        line = json.dumps(entry, separators=(",", ":")) + "\n"
        with self.log_lock:
            self.log_file.write(line)
            self.log_file.flush()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, sim, name, state, handler, noredirect=True):
        self.sim = sim
        self.name = name
        self.state = state  # "active", "standby", or "datanode"
        self.noredirect = noredirect  # False: OPEN always answers the 307
        super().__init__(("127.0.0.1", 0), handler)

    def server_bind(self):
        # HTTPServer.server_bind resolves the host name; nothing here needs it.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def finish_request(self, request, client_address):
        if self.sim.tls is None:
            return super().finish_request(request, client_address)
        # The handshake runs in the connection's thread, not the accept loop.
        try:
            request = self.sim.tls.wrap_socket(request, server_side=True)
        except OSError:
            return
        try:
            super().finish_request(request, client_address)
        finally:
            request.close()

    def handle_error(self, request, client_address):
        # Clients that go away mid-request are normal; anything else is a bug.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every answer has Content-Length
    server_version = "webhdfs_sim"
    sys_version = ""
    disable_nagle_algorithm = True  # headers and body go out in separate sends

    def log_message(self, format, *args):
        pass

    def version_string(self):
        return self.server_version

    # ---- entry points ----

    def do_GET(self):
        self._begin()
        try:
            self._route()
        except WebHdfsError as e:
            self._remote(e.status, e.exception, e.message)
        finally:
            self._finish()

    def do_HEAD(self):
        self._unsupported()

    def _unsupported(self):
        self._begin()
        self._drain_body()
        try:
            self._remote(405, "UnsupportedOperationException",
                         f"{self.command} is not supported by this read-only simulator",
                         headers=[("Allow", "GET")])
        finally:
            self._finish()

    do_PUT = do_POST = do_DELETE = do_PATCH = do_OPTIONS = _unsupported

    # ---- request bookkeeping ----

    def _begin(self):
        self.sim = self.server.sim
        url = urllib.parse.urlsplit(self.path)
        self.url_path = url.path
        pairs = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
        self.query = {}
        for k, v in pairs:
            self.query.setdefault(k, v)
        # Hadoop matches parameter names case-insensitively.
        self.params = {}
        for k, v in pairs:
            self.params.setdefault(k.lower(), v)
        self.user = self.params.get("user.name")
        self.hdfs_path = None
        self.status = None
        self.sent = 0
        self.auth = None
        self.principal = None
        self.auth_headers = []  # mutual-auth token, sent with every later answer

    def _finish(self):
        self.sim.log({
            "server": self.server.name,
            "method": self.command,
            "path": self.hdfs_path if self.hdfs_path is not None else self.url_path,
            "query": self.query,
            "status": self.status,
            "bytes": self.sent,
            "user": self.user,
            "auth": self.auth,
            "principal": self.principal,
        })

    def _drain_body(self):
        # Read an unwanted request body so the connection stays usable.
        length = self.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) <= 1 << 20:
            self.rfile.read(int(length))
        elif length is not None or self.headers.get("Transfer-Encoding"):
            self.close_connection = True

    # ---- responses ----

    def _send_all(self, data):
        view = memoryview(data)
        while view:
            n = self.connection.send(view)
            self.sent += n
            view = view[n:]

    def _respond(self, status, body=b"", content_type=None, headers=()):
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        for name, value in list(headers) + self.auth_headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.status = status
        if body and self.command != "HEAD":
            try:
                self._send_all(body)
            except OSError:
                self.close_connection = True

    def _json(self, status, obj, headers=()):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self._respond(status, body, "application/json", headers)

    def _remote(self, status, exception, message, headers=()):
        self._json(status, {"RemoteException": {
            "exception": exception,
            "javaClassName": JAVA_CLASSES[exception],
            "message": message,
        }}, headers)

    # ---- routing ----

    def _route(self):
        p = self.url_path
        if p != PREFIX and not p.startswith(PREFIX + "/"):
            return self._respond(404, b"Not Found\n", "text/plain")
        path = "/" + "/".join(s for s in urllib.parse.unquote(p[len(PREFIX):]).split("/") if s)
        self.hdfs_path = path
        if self.server.state == "datanode":
            return self._datanode(path)
        if self.sim.cfg["negotiate"] is not None and not self._negotiate():
            return
        if self.server.state == "standby":
            raise WebHdfsError(403, "StandbyException", STANDBY_MESSAGE)
        self._check_user(path)
        op = self._op(NN_OPS)
        if op == "OPEN":
            return self._nn_open(path)
        kind = self._lookup(path)
        ns = self.sim.ns
        if op == "GETFILESTATUS":
            return self._json(200, {"FileStatus": ns.status(path, "")})
        if kind == "FILE":
            entries = [ns.status(path, "")]
        else:
            entries = [ns.status(posixpath.join(path, c), c) for c in ns.children[path]]
        self._json(200, {"FileStatuses": {"FileStatus": entries}})

    def _op(self, allowed):
        op = self.params.get("op")
        if op is None or op.upper() not in allowed:
            raise WebHdfsError(400, "IllegalArgumentException",
                               f'Invalid value for webhdfs parameter "op": No enum constant '
                               f'org.apache.hadoop.hdfs.web.resources.GetOpParam.Op.{op or "null"}')
        return op.upper()

    def _effective_user(self):
        if self.principal:
            return re.split(r"[/@]", self.principal)[0]
        return self.user if self.user is not None else "anonymous"

    def _check_user(self, path):
        required = self.sim.cfg["require_user"]
        if required is None or self.principal or self.user == required:
            return
        raise WebHdfsError(403, "AccessControlException",
                           f"Permission denied: user={self._effective_user()}, access=READ, "
                           f'inode="{path}":{required}:supergroup:drwx------')

    def _lookup(self, path):
        """Denied -> 403, missing -> 404, else the path's kind."""
        ns = self.sim.ns
        denier = ns.denied_by(path)
        if denier is not None:
            is_file = denier in ns.files
            access = "READ" if is_file else ("READ_EXECUTE" if path == denier else "EXECUTE")
            mode = "-rw-------" if is_file else "drwx------"
            raise WebHdfsError(403, "AccessControlException",
                               f"Permission denied: user={self._effective_user()}, "
                               f'access={access}, inode="{denier}":hdfs:supergroup:{mode}')
        kind = ns.kind(path)
        if kind is None:
            raise WebHdfsError(404, "FileNotFoundException", f"File does not exist: {path}")
        return kind

    def _long_param(self, name, minimum):
        value = self.params.get(name)
        if value is None:
            return None
        if not INTEGER.match(value):
            raise WebHdfsError(400, "IllegalArgumentException",
                               f'Invalid value for webhdfs parameter "{name}": '
                               f'Failed to parse "{value}" as a radix-10 long integer.')
        n = int(value)
        if n < minimum:
            raise WebHdfsError(400, "IllegalArgumentException",
                               f'Invalid value for webhdfs parameter "{name}": '
                               f"Invalid parameter range: {name} = {n} < {minimum}")
        return n

    def _open_params(self):
        # Hadoop parses parameters first: malformed or negative values are 400.
        offset = self._long_param("offset", 0) or 0
        length = self._long_param("length", 0)
        buffersize = self._long_param("buffersize", 1)
        return offset, length, buffersize

    def _open_file(self, path):
        if self._lookup(path) != "FILE":
            raise WebHdfsError(404, "FileNotFoundException", f"Path is not a file: {path}")
        return self.sim.ns.files[path]

    # ---- NameNode ----

    def _nn_open(self, path):
        offset, length, buffersize = self._open_params()
        noredirect = self.params.get("noredirect", "false").lower()
        if noredirect not in ("true", "false"):
            raise WebHdfsError(400, "IllegalArgumentException",
                               f'Invalid value for webhdfs parameter "noredirect": '
                               f'Failed to parse "{noredirect}" to Boolean.')
        size = self._open_file(path)
        # Hadoop's NameNode (chooseDatanode) rejects offset >= length for a
        # non-empty file with an IOException, which WebHDFS maps to 403; an
        # empty file accepts any offset >= 0.
        if offset >= size > 0:
            raise WebHdfsError(403, "IOException",
                               f"Offset={offset} out of the range [0, {size}); "
                               f"OPEN, path={path}")
        query = [("op", "OPEN")]
        if self.user is not None:
            query.append(("user.name", self.user))
        query += [("namenoderpcaddress", NAMENODE_RPC), ("offset", str(offset))]
        if length is not None:
            query.append(("length", str(length)))
        if buffersize is not None:
            query.append(("buffersize", str(buffersize)))
        scheme = "https" if self.sim.tls is not None else "http"
        location = (f"{scheme}://127.0.0.1:{self.sim.datanode_port}{PREFIX}"
                    f"{urllib.parse.quote(path, safe='/')}?"
                    + urllib.parse.urlencode(query, safe=":", quote_via=urllib.parse.quote))
        if noredirect == "true" and self.server.noredirect:
            return self._json(200, {"Location": location})
        self._respond(307, headers=[("Location", location)])

    # ---- SPNEGO (NameNodes only) ----

    def _negotiate(self):
        """True when the request may go on; otherwise the answer is sent."""
        scheme, _, b64 = self.headers.get("Authorization", "").strip().partition(" ")
        if scheme.lower() != "negotiate" or not b64.strip():
            # Hadoop's AuthenticationFilter: 401 with a bare Negotiate challenge.
            self._respond(401, b"<html><body><h2>HTTP ERROR 401</h2>"
                          b"<p>Authentication required</p></body></html>\n",
                          "text/html; charset=iso-8859-1",
                          [("WWW-Authenticate", "Negotiate")])
            return False
        acceptor = self.sim.acceptor
        try:
            token = base64.b64decode(b64.strip(), validate=True)
            if acceptor is None:
                raise ValueError("No valid credentials provided (Mechanism level: "
                                 "the simulator was given no keytab)")
            principal, out = acceptor.accept(token)
        except Exception as e:  # binascii.Error, ValueError, gssapi's GSSError
            message = " ".join(str(e).split())
            raise WebHdfsError(403, "AuthenticationException", f"GSSException: {message}")
        out_headers = [("WWW-Authenticate", "Negotiate " + base64.b64encode(out).decode())] \
            if out else []
        if principal is None:  # the mechanism wants another leg
            self._respond(401, b"", "text/html", out_headers)
            return False
        self.auth = "negotiate"
        self.principal = principal
        self.auth_headers = out_headers
        return True

    # ---- DataNode ----

    def _datanode(self, path):
        # The DataNode trusts the redirect when Negotiate is on (in Hadoop it
        # carries a delegation token); otherwise it checks user.name too.
        if self.sim.cfg["negotiate"] is None:
            self._check_user(path)
        self._op(("OPEN",))
        offset, length, _ = self._open_params()
        size = self._open_file(path)
        # DFSInputStream.seek allows seeking to EOF, not past it.
        if offset > size:
            raise WebHdfsError(403, "EOFException", "Cannot seek after EOF")
        n = size - offset if length is None else min(length, size - offset)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        self.status = 200
        phase = (offset + len(path.encode())) % PERIOD
        view = memoryview(PATTERN)
        try:
            while self.sent < n:
                start = (phase + self.sent) % PERIOD
                k = self.connection.send(view[start:start + min(CHUNK, n - self.sent)])
                self.sent += k
        except OSError:  # the client closed mid-body: normal, stop quietly
            self.close_connection = True


# ---- configuration ----

def load_config(config_path):
    try:
        with open(config_path, encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read {config_path}: {e.strerror}")
    except ValueError as e:
        raise ConfigError(f"{config_path} is not valid JSON: {e}")
    if not isinstance(raw, dict):
        raise ConfigError("the config must be a JSON object")
    known = {"namenodes", "files", "dirs", "denied", "require_user", "negotiate", "tls"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"unknown config key {unknown[0]!r}")
    base = os.path.dirname(os.path.abspath(config_path))

    def rel(p):
        return os.path.join(base, p)

    namenodes = raw.get("namenodes")
    if not isinstance(namenodes, list) or not namenodes:
        raise ConfigError("namenodes must be a non-empty list")
    states = []
    for i, nn in enumerate(namenodes):
        if not isinstance(nn, dict) or nn.get("state") not in ("active", "standby"):
            raise ConfigError(f'namenodes[{i}] must be {{"state": "active"|"standby"}}')
        if set(nn) - {"state", "noredirect"} or not isinstance(nn.get("noredirect", True), bool):
            raise ConfigError(f'namenodes[{i}] takes "state" and an optional boolean "noredirect"')
        states.append((nn["state"], nn.get("noredirect", True)))

    files = raw.get("files") or {}
    if not isinstance(files, dict):
        raise ConfigError("files must be an object of path: size")
    for p, size in files.items():
        _check_path("files", p)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ConfigError(f"files: size of {p} must be a non-negative integer")
    lists = {}
    for key in ("dirs", "denied"):
        value = raw.get(key) or []
        if not isinstance(value, list):
            raise ConfigError(f"{key} must be a list of paths")
        lists[key] = [_check_path(key, p) for p in value]

    require_user = raw.get("require_user")
    if require_user is not None and (not isinstance(require_user, str) or not require_user):
        raise ConfigError("require_user must be a non-empty string")

    negotiate = raw.get("negotiate")
    acceptor = None
    if negotiate is not None:
        if not isinstance(negotiate, dict) or set(negotiate) - {"keytab"}:
            raise ConfigError('negotiate must be null, {} or {"keytab": PATH}')
        if negotiate.get("keytab") is not None:
            keytab = rel(negotiate["keytab"])
            if not os.path.isfile(keytab):
                raise ConfigError(f"negotiate.keytab {keytab} does not exist")
            try:
                import gssapi
            except ImportError:
                raise ConfigError(f"negotiate.keytab needs the python module gssapi, which "
                                  f"{sys.executable} cannot import (Debian: python3-gssapi)")
            try:
                acceptor = Acceptor(gssapi, keytab)
            except gssapi.exceptions.GSSError as e:
                raise ConfigError(f"no acceptor credentials from {keytab}: "
                                  + " ".join(str(e).split()))

    tls = raw.get("tls")
    tls_context = None
    if tls is not None:
        if not isinstance(tls, dict) or not isinstance(tls.get("cert"), str) \
                or not isinstance(tls.get("key"), str):
            raise ConfigError('tls must be null or {"cert": PATH, "key": PATH}')
        tls_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            tls_context.load_cert_chain(rel(tls["cert"]), rel(tls["key"]))
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"tls: cannot load {tls['cert']} / {tls['key']}: {e}")

    return {
        "states": states,
        "ns": Namespace(dict(files), lists["dirs"], lists["denied"]),
        "require_user": require_user,
        "negotiate": negotiate,
        "acceptor": acceptor,
        "tls_context": tls_context,
    }


def write_ready(path, ports):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(ports, f)
        f.write("\n")
    os.rename(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="WebHDFS protocol simulator (from Apache's WebHDFS REST API "
                    "document; not Hadoop).")
    parser.add_argument("--config", required=True, help="config JSON file")
    parser.add_argument("--ready-file", required=True,
                        help='written once all servers listen: {"namenodes": [...], "datanode": N}')
    parser.add_argument("--log-file", required=True, help="JSON-lines request log (appended)")
    args = parser.parse_args(argv)

    try:
        cfg = load_config(args.config)
        log = open(args.log_file, "a", encoding="utf-8")
    except ConfigError as e:
        print(f"webhdfs_sim: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"webhdfs_sim: cannot open log file {args.log_file}: {e.strerror}", file=sys.stderr)
        return 2

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    sim = Sim(cfg, log)
    datanode = Server(sim, "dn", "datanode", Handler)
    sim.datanode_port = datanode.server_port
    namenodes = [Server(sim, f"nn{i}", state, Handler, noredirect)
                 for i, (state, noredirect) in enumerate(cfg["states"])]
    servers = namenodes + [datanode]
    for s in servers:
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
    write_ready(args.ready_file, {"namenodes": [s.server_port for s in namenodes],
                                  "datanode": datanode.server_port})

    while not stop.wait(0.5):
        pass
    for s in servers:
        s.shutdown()
        s.server_close()
    with sim.log_lock:
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
