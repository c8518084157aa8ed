#!/usr/bin/env python3
"""A logging TCP proxy for the CQL native protocol (v3, v4 and v5).

It relays LISTEN (default 127.0.0.1:9043) to UPSTREAM (default 127.0.0.1:9042) and
writes one JSON object per decoded envelope (frame) to LOG, in the order the proxy
saw them:

    {"conn": 1, "dir": "c2s"|"s2c", "version": 5, "stream": 3,
     "opcode": "QUERY", "body": {...}}

Run it, point a client at port 9043, stop it with Ctrl-C (or SIGTERM):

    python3 cqlproxy.py --log /tmp/capture.jsonl [--listen 9043] [--upstream 9042]
    cqlsh 127.0.0.1 9043 -e "SELECT release_version FROM system.local"

Protocol v5 (native_protocol_v5.spec, section 2): once the server has answered
STARTUP with READY (or AUTHENTICATE), both directions carry "segments": a 3-byte
little-endian header (17 bits payload length, 1 bit self-contained) and its CRC24,
the payload, and a CRC32 of the payload. A self-contained payload holds whole
envelopes; otherwise the envelope spans several segments. Compressed segments (a
5-byte header) are not decoded: the clients captured here do not compress (no lz4
module in the venv), and the proxy logs a "compressed" marker if one does.
Checksums are relayed, not verified.
"""

import argparse
import itertools
import json
import socket
import struct
import sys
import threading

OPCODES = {
    0x00: "ERROR", 0x01: "STARTUP", 0x02: "READY", 0x03: "AUTHENTICATE",
    0x05: "OPTIONS", 0x06: "SUPPORTED", 0x07: "QUERY", 0x08: "RESULT",
    0x09: "PREPARE", 0x0A: "EXECUTE", 0x0B: "REGISTER", 0x0C: "EVENT",
    0x0D: "BATCH", 0x0E: "AUTH_CHALLENGE", 0x0F: "AUTH_RESPONSE", 0x10: "AUTH_SUCCESS",
}
CONSISTENCY = {
    0: "ANY", 1: "ONE", 2: "TWO", 3: "THREE", 4: "QUORUM", 5: "ALL", 6: "LOCAL_QUORUM",
    7: "EACH_QUORUM", 8: "SERIAL", 9: "LOCAL_SERIAL", 10: "LOCAL_ONE",
}
RESULT_KINDS = {1: "void", 2: "rows", 3: "set_keyspace", 4: "prepared", 5: "schema_change"}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated body")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def byte(self):
        return self.take(1)[0]

    def short(self):
        return struct.unpack(">H", self.take(2))[0]

    def int(self):
        return struct.unpack(">i", self.take(4))[0]

    def long(self):
        return struct.unpack(">q", self.take(8))[0]

    def string(self):
        return self.take(self.short()).decode("utf-8", "replace")

    def long_string(self):
        return self.take(self.int()).decode("utf-8", "replace")

    def short_bytes(self):
        return self.take(self.short())

    def bytes(self):
        n = self.int()
        return None if n < 0 else self.take(n)

    def string_list(self):
        return [self.string() for _ in range(self.short())]

    def string_map(self):
        return {self.string(): self.string() for _ in range(self.short())}

    def string_multimap(self):
        return {self.string(): self.string_list() for _ in range(self.short())}


def value_repr(v):
    return None if v is None else v.hex()


def query_params(r, version):
    """<consistency><flags>[values][page_size][paging_state][serial][timestamp][keyspace][now]"""
    out = {"consistency": CONSISTENCY.get(r.short(), "?")}
    flags = r.int() if version >= 5 else r.byte()
    out["flags"] = flags
    if flags & 0x01:
        n = r.short()
        if flags & 0x40:
            out["values"] = {r.string(): value_repr(r.bytes()) for _ in range(n)}
        else:
            out["values"] = [value_repr(r.bytes()) for _ in range(n)]
    if flags & 0x02:
        out["skip_metadata"] = True
    if flags & 0x04:
        out["page_size"] = r.int()
    if flags & 0x08:
        out["paging_state"] = r.bytes().hex()
    if flags & 0x10:
        out["serial_consistency"] = CONSISTENCY.get(r.short(), "?")
    if flags & 0x20:
        out["timestamp"] = r.long()
    if version >= 5 and flags & 0x80:
        out["keyspace"] = r.string()
    if version >= 5 and flags & 0x100:
        out["now_in_seconds"] = r.int()
    return out


class Conn:
    """Per-connection state shared by both relay directions."""

    ids = itertools.count(1)

    def __init__(self, log):
        self.id = next(Conn.ids)
        self.log = log
        self.segmented = {"c2s": False, "s2c": False}
        self.prepared = {}  # prepared id (hex) -> query text
        self.pending_prepare = {}  # stream -> query text

    def decode_body(self, direction, version, stream, opcode, body):
        r = Reader(body)
        name = OPCODES.get(opcode, hex(opcode))
        if name == "STARTUP":
            return r.string_map()
        if name in ("OPTIONS", "READY"):
            return {}
        if name == "SUPPORTED":
            return r.string_multimap()
        if name == "REGISTER":
            return {"events": r.string_list()}
        if name == "QUERY":
            q = r.long_string()
            return {"query": q, **query_params(r, version)}
        if name == "PREPARE":
            q = r.long_string()
            self.pending_prepare[stream] = q
            out = {"query": q}
            if version >= 5:
                flags = r.int()
                if flags & 0x01:
                    out["keyspace"] = r.string()
            return out
        if name == "EXECUTE":
            pid = r.short_bytes().hex()
            out = {"query": self.prepared.get(pid, "<unknown id %s>" % pid)}
            if version >= 5:
                r.short_bytes()  # result metadata id
            out.update(query_params(r, version))
            return out
        if name == "BATCH":
            kind = {0: "LOGGED", 1: "UNLOGGED", 2: "COUNTER"}.get(r.byte(), "?")
            stmts = []
            for _ in range(r.short()):
                if r.byte() == 0:
                    q = r.long_string()
                else:
                    pid = r.short_bytes().hex()
                    q = self.prepared.get(pid, "<unknown id %s>" % pid)
                vals = [value_repr(r.bytes()) for _ in range(r.short())]
                stmts.append({"query": q, "values": vals})
            return {"type": kind, "statements": stmts, "consistency": CONSISTENCY.get(r.short(), "?")}
        if name == "ERROR":
            code = r.int()
            return {"code": "0x%04x" % code, "message": r.string()}
        if name == "EVENT":
            event = r.string()
            out = {"event": event, "change": r.string()}
            if event == "SCHEMA_CHANGE":
                out["target"] = r.string()
                out["keyspace"] = r.string()
                if out["target"] != "KEYSPACE":
                    out["name"] = r.string()
            return out
        if name == "RESULT":
            kind = r.int()
            out = {"kind": RESULT_KINDS.get(kind, kind)}
            if kind == 3:
                out["keyspace"] = r.string()
            elif kind == 4:
                pid = r.short_bytes().hex()
                if stream in self.pending_prepare:
                    self.prepared[pid] = self.pending_prepare.pop(stream)
            elif kind == 5:
                out["change"] = r.string()
                out["target"] = r.string()
                out["name"] = [r.string()] if out["target"] == "KEYSPACE" else [r.string(), r.string()]
            elif kind == 2:
                flags = r.int()
                ncols = r.int()
                if flags & 0x02:
                    out["has_more_pages"] = True
                    r.bytes()
                if version >= 5 and flags & 0x08:
                    r.short_bytes()
                if not flags & 0x04 and ncols:
                    glob = flags & 0x01
                    if glob:
                        r.string(), r.string()
                    cols = []
                    for _ in range(ncols):
                        if not glob:
                            r.string(), r.string()
                        cols.append(r.string())
                        skip_type(r)
                    out["columns"] = cols
                out["row_count"] = r.int()
            return out
        return {"raw_len": len(body)}

    def envelope(self, direction, data):
        version_byte, flags, stream, opcode, length = struct.unpack(">BBhBi", data[:9])
        version = version_byte & 0x7F
        body = data[9:9 + length]
        entry = {"conn": self.id, "dir": direction, "version": version, "stream": stream,
                 "opcode": OPCODES.get(opcode, hex(opcode))}
        if flags & 0x01:
            entry["compressed"] = True
        elif flags & 0x08 and opcode != 0x05:  # warning flag on a response
            r = Reader(body)
            entry["warnings"] = r.string_list()
            body = body[r.pos:]
        try:
            if not flags & 0x01:
                entry["body"] = self.decode_body(direction, version, stream, opcode, body)
        except Exception as e:  # the relay must go on whatever a body holds
            entry["decode_error"] = str(e)
        self.log(entry)
        # v5 framing starts after STARTUP has been answered with READY or AUTHENTICATE.
        if direction == "s2c" and version >= 5 and opcode in (0x02, 0x03):
            self.segmented["s2c"] = True
            self.segmented["c2s"] = True


def skip_type(r):
    t = r.short()
    if t == 0x0000:
        r.string()
    elif t in (0x0020, 0x0022):
        skip_type(r)
    elif t == 0x0021:
        skip_type(r)
        skip_type(r)
    elif t == 0x0030:
        r.string(), r.string()
        for _ in range(r.short()):
            r.string()
            skip_type(r)
    elif t == 0x0031:
        for _ in range(r.short()):
            skip_type(r)


class Decoder:
    """Splits one direction's byte stream into envelopes, through v5 segments when on."""

    def __init__(self, conn, direction):
        self.conn, self.dir = conn, direction
        self.raw = bytearray()  # bytes from the socket not yet consumed
        self.env = bytearray()  # envelope bytes (unframed, or segment payloads)

    def feed(self, data):
        self.raw += data
        while True:
            if self.conn.segmented[self.dir]:
                if len(self.raw) < 6:
                    return
                h = int.from_bytes(self.raw[:3], "little")
                plen = h & 0x1FFFF
                if len(self.raw) < 6 + plen + 4:
                    return
                self.env += self.raw[6:6 + plen]
                del self.raw[:6 + plen + 4]
            else:
                # Unframed: envelope bytes come straight from the socket. Move only one
                # envelope at a time, as framing may switch right after it.
                if len(self.raw) < 9:
                    return
                n = 9 + struct.unpack(">i", self.raw[5:9])[0]
                if len(self.raw) < n:
                    return
                self.env += self.raw[:n]
                del self.raw[:n]
            self.drain_envelopes()

    def drain_envelopes(self):
        while len(self.env) >= 9:
            n = 9 + struct.unpack(">i", self.env[5:9])[0]
            if len(self.env) < n:
                return
            frame = bytes(self.env[:n])
            del self.env[:n]
            self.conn.envelope(self.dir, frame)


def relay(src, dst, decoder):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            # Decode before forwarding so the framing switch is recorded before the
            # peer can answer.
            decoder.feed(data)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", type=int, default=9043)
    ap.add_argument("--upstream", type=int, default=9042)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--log", required=True)
    args = ap.parse_args()
    lock = threading.Lock()
    out = open(args.log, "a", buffering=1)

    def log(entry):
        with lock:
            out.write(json.dumps(entry) + "\n")

    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((args.host, args.listen))
    srv.listen(16)
    print("proxy %s:%d -> %d, log %s" % (args.host, args.listen, args.upstream, args.log), file=sys.stderr)
    while True:
        client, _ = srv.accept()
        upstream = socket.create_connection((args.host, args.upstream))
        conn = Conn(log)
        log({"conn": conn.id, "event": "accepted"})
        threading.Thread(target=relay, args=(client, upstream, Decoder(conn, "c2s")), daemon=True).start()
        threading.Thread(target=relay, args=(upstream, client, Decoder(conn, "s2c")), daemon=True).start()


if __name__ == "__main__":
    main()
