#!/usr/bin/env python3
"""Helpers of scripts/lb-recreate.sh (deploy/README.md "Checked by hand"): the pieces of a compose
replica recreate, emulated on loopback inside a private network namespace. Standard library only;
loopback only; every loop bounded in time.

  lb-recreate.py dns ADDR NAMES_JSON        A records from a JSON file re-read per query, TTL 1 s
  lb-recreate.py upstream PORT              fake model server: every POST gets a short SSE answer
  lb-recreate.py blackhole ADDR PORT        an address where no connect ever completes
  lb-recreate.py client SECONDS OUT         2 workers posting streamed chats to 127.0.0.1:8080
  lb-recreate.py analyse DIR                what nginx's access log and the client saw
"""

import collections
import http.client
import json
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def dns(addr, names_file):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((addr, 53))
    while True:
        data, peer = sock.recvfrom(512)
        tid = struct.unpack(">H", data[:2])[0]
        i, labels = 12, []
        while data[i]:
            n = data[i]
            labels.append(data[i + 1:i + 1 + n].decode())
            i += 1 + n
        qtype = struct.unpack(">H", data[i + 1:i + 3])[0]
        question = data[12:i + 5]
        try:
            with open(names_file) as f:
                names = json.load(f)
        except (OSError, ValueError):
            names = {}
        ips = names.get(".".join(labels).lower())
        answers = b""
        count = 0
        if ips is not None and qtype == 1:
            for ip in ips:
                answers += b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 1, 4) + socket.inet_aton(ip)
                count += 1
        rcode = 0 if ips is not None else 3  # NXDOMAIN for a name that is not (or no longer) there
        header = struct.pack(">HHHHHH", tid, 0x8180 | rcode, 1, count, 0, 0)
        sock.sendto(header + question + answers, peer)


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    BODY = (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
            b'"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
            b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
            b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
            b'data: [DONE]\n\n')

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)

    def log_message(self, *args):
        pass


def blackhole(addr, port):
    # A listener that never accepts, its accept queue filled: the kernel drops every new SYN, as
    # for the address of a container that is gone.
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((addr, port))
    listener.listen(0)
    fillers = []
    for _ in range(4):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect((addr, port))
        except BlockingIOError:
            pass
        fillers.append(s)
    time.sleep(3600)


def client(seconds, out_path):
    t0 = time.time()
    lock = threading.Lock()
    body = json.dumps({"model": "m", "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]})
    headers = {"content-type": "application/json", "x-harness": "passthrough",
               "authorization": "Bearer k"}
    with open(out_path, "w") as out:
        def worker():
            while time.time() - t0 < seconds:
                start = time.time()
                try:
                    c = http.client.HTTPConnection("127.0.0.1", 8080, timeout=30)
                    c.request("POST", "/v1/chat/completions", body, headers)
                    r = c.getresponse()
                    data = r.read()
                    status, ok = r.status, b"[DONE]" in data
                    c.close()
                except OSError as e:
                    status, ok = type(e).__name__, False
                with lock:
                    out.write(f"{start - t0:.3f} {time.time() - start:.3f} {status} {ok}\n")
                time.sleep(0.05)
        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def analyse(run_dir):
    events = [line.rsplit(" ", 1) for line in open(f"{run_dir}/events").read().splitlines()]
    t_stop, t_up = float(events[1][1]), float(events[2][1])
    rows = []
    for line in open(f"{run_dir}/access.log"):
        msec, method, status, rt, addr, _connect, _ustatus = line.rstrip("\n").split("|")
        if method == "POST":  # not the set-up's health checks
            rows.append((float(msec) - float(rt), status, float(rt), addr))
    start = rows[0][0]
    print(f"{run_dir}: {len(rows)} requests in {rows[-1][0] - start:.1f} s; replica stopped at "
          f"+{t_stop - start:.1f} s, up on its new address at +{t_up - start:.1f} s")
    print(" nginx statuses:", dict(collections.Counter(r[1] for r in rows)))
    slow = [r for r in rows if r[2] > 0.5]
    print(f" requests over 0.5 s: {len(slow)}; longest {max(r[2] for r in rows):.3f} s")
    for r in slow[:10]:
        print(f"   started +{r[0] - start:.2f} s: {r[1]} in {r[2]:.3f} s via {r[3]}")
    old = [r for r in rows if r[0] > t_stop and "127.0.0.2" in r[3]]
    print(f" requests after the stop that tried the old address: {len(old)}")
    new = [r for r in rows if "127.0.0.4" in r[3]]
    if new:
        print(f" the new address: first request {new[0][0] - t_up:.2f} s after it was up, "
              f"{len(new)} requests in all")
    else:
        print(" the new address got no request")
    seen = [line.split() for line in open(f"{run_dir}/client.log")]
    print(f" client: {len(seen)} requests, {sum(1 for s in seen if s[3] == 'True')} complete "
          f"streams, {dict(collections.Counter(s[2] for s in seen))}")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "dns":
        dns(args[0], args[1])
    elif cmd == "upstream":
        ThreadingHTTPServer(("127.0.0.1", int(args[0])), Upstream).serve_forever()
    elif cmd == "blackhole":
        blackhole(args[0], int(args[1]))
    elif cmd == "client":
        client(float(args[0]), args[1])
    elif cmd == "analyse":
        analyse(args[0])
    else:
        sys.exit(__doc__)
